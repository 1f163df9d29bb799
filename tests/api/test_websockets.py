"""Websockets: search streams the same events as SSE; sync progress reaches subscribers from a worker process.

The cross-process tests start a real daphne server and a separate worker process against the
test database, over the PostgreSQL channel layer and over Redis.
"""
from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
import websockets
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from rest_framework.test import APIClient

from airweave.asgi import application
from airweave.collections.services import collection_create
from airweave.tenancy.services import api_key_create, organization_get_or_create
from connectors.services import source_connection_create
from connectors.sync.services import sync_job_start
from tests.api.test_search_pipeline import FILES, collect

PROJECT_DIR = settings.BASE_DIR


@pytest.fixture
def setup(transactional_db, write_files, monkeypatch):
    for name in ("OPENAI_API_KEY", "COHERE_API_KEY", "GROQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    org = organization_get_or_create(name="Socket org")
    collection = collection_create(organization=org, name="Socket docs", readable_id="socket-docs")
    connection = source_connection_create(collection=collection, short_name="local_files",
                                          config={"path": str(write_files(FILES))}, sync_immediately=False, for_api=False)
    return {"org": org, "key": api_key_create(organization=org).key, "connection": connection}


def _socket_events(path: str, key: str, request: dict | None = None, until: str = "done") -> list[dict]:
    async def run():
        communicator = WebsocketCommunicator(application, path, headers=[(b"x-api-key", key.encode()),
                                                                         (b"origin", b"http://testserver")])
        connected, code = await communicator.connect(timeout=30)
        assert connected, code
        if request is not None:
            await communicator.send_json_to(request)
        events = []
        while not events or events[-1]["type"] != until:
            events.append(await communicator.receive_json_from(timeout=60))
        await communicator.disconnect()
        return events

    return async_to_sync(run)()


def test_websocket_search_streams_the_same_events_as_sse(setup):
    from connectors.sync.services import sync_job_run

    sync_job_run(job_id=sync_job_start(source_connection=setup["connection"], enqueue=False).id)
    request = {"query": "lost laptop", "limit": 2}
    over_socket = _socket_events("/ws/collections/socket-docs/search/", setup["key"], request)
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=setup["key"])
    raw = "".join(p if isinstance(p, str) else p.decode() for p in collect(client.post(
        "/collections/socket-docs/search/stream", request, format="json").streaming_content))
    over_sse = [json.loads(f[6:]) for f in raw.split("\n\n") if f]

    def shape(events):
        return [(e["type"], e.get("name")) for e in events]

    assert shape(over_socket) == shape(over_sse)
    assert over_socket[-2]["results"][0]["name"] == "Laptops"


def test_sync_socket_sends_heartbeats_while_the_job_is_quiet(setup, settings):
    settings.AIRWEAVE_HEARTBEAT_SECONDS = 0.2
    job = sync_job_start(source_connection=setup["connection"], enqueue=False)  # pending: nothing happens

    async def run():
        communicator = WebsocketCommunicator(application, f"ws/sync/job/{job.id}/",
                                             headers=[(b"x-api-key", setup["key"].encode()), (b"origin", b"http://testserver")])
        connected, _ = await communicator.connect(timeout=30)
        assert connected
        events = [await communicator.receive_json_from(timeout=10) for _ in range(4)]
        await communicator.disconnect()
        return events

    events = async_to_sync(run)()
    assert [e["type"] for e in events] == ["connected", "progress", "heartbeat", "heartbeat"]
    assert [e["seq"] for e in events] == [1, 2, 3, 4] and all("ts" in e for e in events)


def test_sync_sse_sends_heartbeats_while_the_job_is_quiet(setup, settings):
    settings.AIRWEAVE_HEARTBEAT_SECONDS = 0.2
    job = sync_job_start(source_connection=setup["connection"], enqueue=False)
    client = APIClient(HTTP_X_API_KEY=setup["key"])
    response = client.get(f"/sync/job/{job.id}/subscribe", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")

    async def first_frames(count):
        frames, iterator = [], response.streaming_content.__aiter__()
        while len(frames) < count:
            part = await iterator.__anext__()
            frames += [f for f in (part if isinstance(part, str) else part.decode()).split("\n\n") if f]
        await iterator.aclose()
        return frames

    frames = async_to_sync(first_frames)(4)
    events = [json.loads(f.removeprefix("data: ")) for f in frames[:4]]
    assert [e["type"] for e in events] == ["connected", "progress", "heartbeat", "heartbeat"]


def test_websocket_refuses_unknown_key_and_foreign_collection(setup):
    async def attempt(path, key):
        communicator = WebsocketCommunicator(application, path, headers=[(b"x-api-key", key.encode()),
                                                                         (b"origin", b"http://testserver")])
        connected, code = await communicator.connect(timeout=30)
        if connected:  # refused after the handshake: the close frame carries the code
            output = await communicator.receive_output(timeout=10)
            if output["type"] == "websocket.close":
                connected, code = False, output["code"]
        await communicator.disconnect()
        return connected, code

    assert async_to_sync(attempt)("/ws/collections/socket-docs/search/", "aw_nope_nope") == (False, 4401)
    other = api_key_create(organization=organization_get_or_create(name="Other socket org")).key
    assert async_to_sync(attempt)("/ws/collections/socket-docs/search/", other) == (False, 4404)


def _handshake(path: str, headers: list) -> tuple:
    """(connected, close code): a socket refused after the handshake counts as not connected."""
    async def attempt():
        communicator = WebsocketCommunicator(application, path, headers=headers)
        connected, code = await communicator.connect(timeout=30)
        if connected and not await communicator.receive_nothing(timeout=2):
            output = await communicator.receive_output(timeout=10)
            if output["type"] == "websocket.close":
                connected, code = False, output["code"]
        await communicator.disconnect()
        return connected, code

    return async_to_sync(attempt)()


def test_websocket_accepts_a_program_without_origin_and_refuses_a_foreign_page(setup):
    """SDKs and agents send no Origin (only browsers do): their API key is enough. A browser page
    of another site is refused before authentication, whatever credentials ride along."""
    key = (b"x-api-key", setup["key"].encode())
    path = "/ws/collections/socket-docs/search/"
    assert _handshake(path, [key])[0] is True
    assert _handshake(path, [key, (b"origin", b"http://testserver")])[0] is True
    assert _handshake(path, [key, (b"origin", b"https://evil.example")])[0] is False
    assert _handshake(path, [key, (b"origin", b"null")])[0] is False
    assert _handshake(path, [(b"x-api-key", b"aw_nope_nope")]) == (False, 4401)  # no origin, no valid key


def test_bad_search_message_answers_an_error_event(setup):
    events = _socket_events("/ws/collections/socket-docs/search/", setup["key"], {"question": "?"}, until="error")
    assert "question" in events[-1]["detail"]  # unknown fields are refused first
    events = _socket_events("/ws/collections/socket-docs/search/", setup["key"], {"query": "x", "limit": "abc"},
                            until="error")
    assert "limit" in events[-1]["detail"]


@pytest.mark.parametrize("message", ["[]", "null", '"leave"', "{", "   ", '{"query": "x"}{"query": "y"}'])
def test_a_message_that_is_not_one_json_object_says_so_in_an_event_envelope(setup, message):
    async def run():
        communicator = WebsocketCommunicator(application, "/ws/collections/socket-docs/search/",
                                             headers=[(b"x-api-key", setup["key"].encode())])
        assert (await communicator.connect(timeout=30))[0]
        await communicator.send_to(text_data=message)
        event = await communicator.receive_json_from(timeout=30)
        await communicator.disconnect()
        return event

    event = async_to_sync(run)()
    assert event["type"] == "error" and event["seq"] == 1 and "ts" in event
    assert event["message"].startswith("send one JSON object per message")


def test_a_bad_filter_over_the_socket_names_the_condition(setup):
    events = _socket_events("/ws/collections/socket-docs/search/", setup["key"],
                            {"query": "x", "filter": {"must": [{"key": "colour", "match": {"value": "red"}}]}},
                            until="error")
    assert events[-1]["loc"] == ["body", "filter", "must", 0, "key"] and "valid filter looks like" in events[-1]["message"]
    assert events[-1]["seq"] == 1 and "ts" in events[-1]


# --- across processes -------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _process_env(layer: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "airweave.settings", "AIRWEAVE_WARM_UP": "0",
           "AIRWEAVE_DATABASE_NAME": settings.DATABASES["default"]["NAME"]}
    env.pop("REDIS_URL", None)
    if layer == "redis":
        env["REDIS_URL"] = "redis://127.0.0.1:6379/15"
    return env


@pytest.fixture(params=["postgres", "redis"])
def server(request):
    if request.param == "redis":
        try:
            socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
        except OSError:
            pytest.skip("Redis is not running on 127.0.0.1:6379")
    port = _free_port()
    env = _process_env(request.param)
    log = tempfile.TemporaryFile()  # not a pipe: an unread pipe could fill up and block the server
    process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "airweave.asgi:application"], cwd=PROJECT_DIR, env=env,
                               stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if process.poll() is not None:
                log.seek(0)
                pytest.fail(log.read().decode()[-2000:])
            time.sleep(0.2)
    yield {"port": port, "env": env, "layer": request.param}
    process.terminate()
    process.wait(10)
    log.close()


def _run_worker(job_id, env) -> subprocess.Popen:
    code = ("import django; django.setup(); from connectors.sync.services import sync_job_run; "
            f"print(sync_job_run(job_id='{job_id}').status)")
    return subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_sync_progress_reaches_websocket_and_sse_from_a_worker_process(setup, server, settings):
    settings.AIRWEAVE_EMBEDDING_BATCH_SIZE = 1  # one progress event per file
    job = sync_job_start(source_connection=setup["connection"], enqueue=False)
    base = f"127.0.0.1:{server['port']}"

    async def listen_socket():
        async with websockets.connect(f"ws://{base}/ws/sync/job/{job.id}/",
                                      additional_headers={"X-API-Key": setup["key"], "Origin": f"http://{base}"}) as ws:
            events = []
            while not events or events[-1]["type"] != "sync_complete":
                events.append(json.loads(await asyncio.wait_for(ws.recv(), 120)))
            return events

    def listen_sse():
        request = urllib.request.Request(f"http://{base}/sync/job/{job.id}/subscribe", headers={
            "X-API-Key": setup["key"], "Accept": "text/event-stream"})
        events = []
        with urllib.request.urlopen(request, timeout=120) as response:
            for line in response:
                if line.startswith(b"data: "):
                    events.append(json.loads(line[6:]))
                    if events[-1]["type"] == "sync_complete":
                        return events
        return events

    async def scenario():
        socket_task = asyncio.ensure_future(listen_socket())
        sse_task = asyncio.ensure_future(asyncio.to_thread(listen_sse))
        await asyncio.sleep(2)  # both subscribed
        worker = await asyncio.to_thread(_run_worker, job.id, {**server["env"], "AIRWEAVE_EMBEDDING_BATCH_SIZE": "1"})
        out, err = await asyncio.to_thread(worker.communicate, None, 180)
        assert out.decode().strip() == "completed", err.decode()[-2000:]
        return await asyncio.wait_for(socket_task, 60), await asyncio.wait_for(sse_task, 60)

    for events in asyncio.run(scenario()):
        types = [e["type"] for e in events]
        assert types[0] == "connected" and types[-1] == "sync_complete"
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        inserted = [e["inserted"] for e in events if e["type"] == "progress"]
        assert inserted == sorted(inserted) and inserted[-1] == len(FILES)
        assert len(set(inserted)) >= 3  # the counters climbed while we watched
        assert events[-1]["final_counts"]["inserted"] == len(FILES) and events[-1]["is_complete"]


def test_a_client_that_leaves_mid_search_ends_the_stream_quietly(setup, monkeypatch):
    """daphne raises autobahn's Disconnected (a RuntimeError) when sending to a closed socket: the
    consumer stops forwarding instead of logging an 'Exception inside application' per disconnect."""
    from connectors.sync.services import sync_job_run

    from airweave.api.consumers import SearchConsumer

    sync_job_run(job_id=sync_job_start(source_connection=setup["connection"], enqueue=False).id)
    sent = []

    async def send_json(self, content, close=False):
        if len(sent) == 3:
            raise RuntimeError("Attempt to send on a closed protocol")
        sent.append(content["type"])

    monkeypatch.setattr(SearchConsumer, "send_json", send_json)

    async def run():
        communicator = WebsocketCommunicator(application, "/ws/collections/socket-docs/search/",
                                             headers=[(b"x-api-key", setup["key"].encode())])
        assert (await communicator.connect(timeout=30))[0]
        await communicator.send_json_to({"query": "lost laptop", "limit": 2})
        for _ in range(300):  # until the consumer has given up on the stream
            if len(sent) == 3:
                break
            await asyncio.sleep(0.1)
        await communicator.receive_nothing(timeout=1)
        alive = not communicator.future.done()  # a handler that raises ends the application
        await communicator.disconnect()
        return alive

    assert async_to_sync(run)() is True
    assert sent == ["connected", "start", "operator_start"]


@pytest.mark.parametrize("server", ["postgres"], indirect=True)
def test_a_real_client_sees_4401_and_4404_close_codes(setup, server):
    """Through daphne, not the test communicator: a refused socket closes with the code that says why."""
    base = f"127.0.0.1:{server['port']}"
    other = api_key_create(organization=organization_get_or_create(name="Other socket org")).key

    async def close_code(path, key):
        async with websockets.connect(f"ws://{base}{path}", additional_headers={
                "X-API-Key": key, "Origin": f"http://{base}"}, open_timeout=30) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)
            return ws.close_code

    async def codes():
        return (await close_code("/ws/collections/socket-docs/search/", "aw_nope_nope"),
                await close_code("/ws/collections/socket-docs/search/", other),
                await close_code(f"/ws/sync/job/{setup['connection'].pk}/", setup["key"]))  # no such job

    assert asyncio.run(codes()) == (4401, 4404, 4404)
