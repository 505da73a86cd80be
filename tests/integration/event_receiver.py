"""A webhook receiver on 127.0.0.1 for the event tests, written as a receiver of ours would be:
it verifies every signature (Standard Webhooks), parses the CloudEvent, deduplicates on
``webhook-id``, and answers from a script (``answers``: statuses and headers, in turn; then
200)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

BODY = "x-test-body"
"""An answer's extra "header" that is its body instead (a test's error page)."""
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # 24 bytes, base64
OLD_SECRET = "whsec_" + "C2FVsBQIhrscChlQIMV+b5sSYspob7oD"


@dataclass
class Receiver:
    secret: str = SECRET
    answers: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request: its headers, its parsed event (None when refused) and what it answered."""
    accepted: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Events accepted (a 2xx answered), by ``webhook-id``: each at most once."""
    duplicates: int = 0
    bad_signatures: int = 0
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def receive(
        self,
        headers: dict[str, str],
        body: bytes,
        answer: tuple[int, dict[str, str]] | None = None,
    ) -> tuple[int, dict[str, str]]:
        """Verify, record and answer (``answer``, else the next scripted one, else 200)."""
        try:
            event = Webhook(self.secret).verify(body, headers)
        except WebhookVerificationError:
            with self.lock:
                self.bad_signatures += 1
                self.requests.append({"headers": headers, "event": None, "status": 401})
            return 401, {}
        with self.lock:
            if answer is None:
                answer = self.answers.pop(0) if self.answers else (200, {})
            status, extra = answer
            self.requests.append({"headers": headers, "event": event, "status": status})
            if 200 <= status < 300:
                message_id = headers["webhook-id"]
                if message_id in self.accepted:
                    self.duplicates += 1  # a receiver deduplicates: accepted once only
                else:
                    self.accepted[message_id] = event
        return status, extra


@contextmanager
def receiving(receiver: Receiver) -> Iterator[Receiver]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, extra = receiver.receive(headers, body)
            extra = dict(extra)
            payload = extra.pop(BODY, None) or json.dumps({"status": status})
            payload = payload.encode("latin-1")
            self.send_response(status)
            for name, value in extra.items():  # the others are headers
                self.send_header(name, value)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
