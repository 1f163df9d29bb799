"""The OpenAPI schema and its docs page are public and describe the API."""
from rest_framework.test import APIClient


def test_openapi_json_lists_the_api_paths(db):
    response = APIClient().get("/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    paths = response.json()["paths"]
    for path in ("/collections", "/collections/{readable_id}/search/instant", "/sources",
                 "/source-connections/{id}/run", "/source-connections/{id}/jobs/{job_id}/cancel"):
        assert path in paths


def test_docs_page_serves_swagger_ui_from_local_assets(db):
    response = APIClient().get("/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn.jsdelivr.net" not in html
