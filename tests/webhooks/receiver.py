"""A real HTTP webhook receiver for tests: verifies each request's Standard Webhooks signature
with the `standardwebhooks` package and answers the status codes it is told to, in order."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


class Receiver:
    """`url`; `secret` (set it once known); `statuses` answered in order (then 200); `hang` seconds of
    silence before answering; `received` holds {headers, body, verified, status} per request."""

    def __init__(self, statuses=(), hang: float = 0):
        self.secret: str | None = None
        self.statuses = list(statuses)
        self.hang = hang
        self.received: list[dict] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                headers = {k.lower(): v for k, v in self.headers.items()}
                verified = False
                if receiver.secret:
                    try:
                        Webhook(receiver.secret).verify(body, headers)
                        verified = True
                    except WebhookVerificationError:
                        verified = False
                with receiver._lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.received.append({"headers": headers, "body": json.loads(body), "verified": verified,
                                              "status": status})
                if receiver.hang:
                    time.sleep(receiver.hang)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"receiver says no")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, count: int, timeout: float = 60) -> list[dict]:
        """The requests received, once there are at least `count` (fails after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while len(self.received) < count:
            assert time.monotonic() < deadline, f"{len(self.received)} of {count} webhook requests arrived"
            time.sleep(0.1)
        return list(self.received)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
