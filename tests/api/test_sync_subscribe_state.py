"""GET /sync/job/{job_id}/subscribe-state: a job's entity totals as Airweave's `entity_state` events (issue 12)."""
from __future__ import annotations

import json

from asgiref.sync import async_to_sync


def _events(response) -> list[dict]:
    async def read():
        text = ""
        async for part in response.streaming_content:
            text += part if isinstance(part, str) else part.decode()
        return text

    return [json.loads(f.removeprefix("data: ")) for f in async_to_sync(read)().split("\n\n") if f.strip()]


def test_a_finished_job_answers_its_totals_then_sync_complete(transactional_db, client, make_collection, sync_folder, write_files):
    collection = make_collection()
    connection, job = sync_folder(collection, write_files({"a.md": "# A\nalpha", "b.md": "# B\nbeta", "c.txt": "gamma"}))
    response = client.get(f"/sync/job/{job.id}/subscribe-state/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    events = _events(response)
    assert [e["type"] for e in events] == ["connected", "entity_state", "sync_complete"]
    state = events[1]
    assert state["job_id"] == str(job.id) and state["sync_id"] == str(job.sync_id)
    assert state["total_entities"] == 3 and sum(state["entity_counts"].values()) == 3
    assert state["job_status"] == "completed" and events[2]["final_status"] == "completed"


def test_another_organizations_job_is_a_404(transactional_db, other_client, make_collection, sync_folder, write_files):
    connection, job = sync_folder(make_collection(), write_files({"a.md": "alpha"}))
    assert other_client.get(f"/sync/job/{job.id}/subscribe-state").status_code == 404
