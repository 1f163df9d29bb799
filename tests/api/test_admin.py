"""The admin lists every product model without leaking secrets."""
import pytest

from airweave.tenancy.models import User


@pytest.fixture
def admin_client(client, db):
    from django.test import Client

    User.objects.create_superuser("ops@example.com", "pw-123456")
    c = Client()
    c.login(email="ops@example.com", password="pw-123456")
    return c


@pytest.mark.parametrize("path", ["tenancy/user", "tenancy/organization", "tenancy/apikey", "collections/collection",
                                  "collections/sourceconnection", "collections/syncjob", "collections/entity"])
def test_admin_changelists_render(admin_client, path):
    assert admin_client.get(f"/admin/{path}/").status_code == 200


def test_source_connection_admin_hides_credentials(admin_client, make_collection, write_files):
    from connectors.services import source_connection_create

    connection = source_connection_create(collection=make_collection(), short_name="local_files",
                                          config={"path": str(write_files({"a.md": "x"}))},
                                          credentials={"token": "s3cret-value"}, sync_immediately=False, for_api=False)
    page = admin_client.get(f"/admin/collections/sourceconnection/{connection.id}/change/").content.decode()
    assert "s3cret-value" not in page
    assert connection.encrypted_credentials not in page
