"""An unreachable database answers 503 with what happened, on every face (the real restart is
drilled in tests/drills/test_database_restart.py; these pin each face's answer)."""
from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError
from django.test import RequestFactory

from airweave.api.compat import DatabaseUnavailableMiddleware, server_error
from airweave.api.errors import exception_handler
from airweave.availability import DATABASE_UNAVAILABLE, database_unavailable


def _lost_connection() -> OperationalError:
    try:
        try:
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        except psycopg.OperationalError as cause:
            raise OperationalError(str(cause)) from cause
    except OperationalError as error:
        return error


def test_the_api_answers_json_503_with_retry_after():
    request = RequestFactory().post("/collections/docs/search/stream", HTTP_ACCEPT="text/event-stream")
    response = exception_handler(_lost_connection(), {"request": request})
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "5" and DATABASE_UNAVAILABLE in response.content.decode()


@pytest.mark.parametrize("path, content_type", [("/collections", "application/json"), ("/ui/", "text/html")])
def test_a_view_meeting_no_database_answers_503_json_or_a_short_page(path, content_type):
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get(path), _lost_connection())
    assert response.status_code == 503 and response["Content-Type"].startswith(content_type)
    assert "Traceback" not in response.content.decode() and "database is unavailable" in response.content.decode()


def test_other_errors_are_not_mistaken_for_the_database():
    assert not database_unavailable(ValueError("x"))
    assert DatabaseUnavailableMiddleware(lambda r: None).process_exception(RequestFactory().get("/ui/"), KeyError()) is None


def test_handler500_answers_503_while_handling_a_database_error():
    request = RequestFactory().get("/collections")
    try:
        raise _lost_connection()
    except OperationalError:
        response = server_error(request)
    assert response.status_code == 503


def test_a_stream_that_loses_the_database_ends_with_a_503_error_event():
    from asgiref.sync import async_to_sync

    from search.streams import stream_from_thread

    def run(stream):
        stream.emit("started")
        raise _lost_connection()

    async def drain():
        return [event async for event in stream_from_thread(run)]

    events = async_to_sync(drain)()
    assert [e["type"] for e in events] == ["started", "error"]
    assert events[-1]["status"] == 503 and events[-1]["message"] == DATABASE_UNAVAILABLE
