"""Shapes that only some data produce, checked against the SDK's own models without a server:
a federated source's result with no entity type, chunk index or breadcrumb types (issue 12)."""
from __future__ import annotations

from search.results import federated_result, v2_candidate
from search.state import Candidate
from tests.compat.sdk import load_sdk

sdk = load_sdk()


def test_a_sparse_federated_result_parses_as_the_sdks_search_result():
    raw = {"entity_id": "octo/repo#12", "name": "Login fails", "textual_representation": "Steps to reproduce",
           "breadcrumbs": [{"entity_id": "octo/repo", "name": "octo/repo"}],
           "system_metadata": {"entity_type": None, "chunk_index": None}}
    pipeline = federated_result(raw, source_name="github", access={"viewers": [], "is_public": True})
    v2 = v2_candidate(Candidate(chunk_id=None, entity_pk=None, score=0.5, federated=pipeline))
    result = sdk.SearchResult.model_validate(v2)
    assert result.airweave_system_metadata.entity_type == "FederatedResult"
    assert result.airweave_system_metadata.chunk_index == 0
    assert result.airweave_system_metadata.source_name == "github"
    assert result.airweave_system_metadata.original_entity_id == "octo/repo#12"
    assert result.breadcrumbs[0].entity_type == "" and result.relevance_score == 0.5
    response = sdk.SearchV2Response.model_validate({"results": [v2]})
    assert len(response.results) == 1
