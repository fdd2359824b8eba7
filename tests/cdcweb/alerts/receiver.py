"""A webhook receiver for tests: a threading HTTP server on 127.0.0.1 that records what it is sent."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    """One request as the receiver saw it, and when (time.time())."""

    at: float
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """The server's state: the answers to give, in order (then 200), and what arrived."""

    answers: list[int] = field(default_factory=list)
    delay: float = 0.0
    location: str = ""  # sent with a 3xx answer
    received: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def next_answer(self) -> int:
        return self.answers.pop(0) if self.answers else 200


def _handler(receiver: Receiver):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.received.append(Received(time.time(), self.path, dict(self.headers.items()), body))
            time.sleep(receiver.delay)  # a slow receiver on purpose (the delivery timeout tests)
            status = receiver.next_answer()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            if 300 <= status < 400 and receiver.location:
                self.send_header("Location", receiver.location)
            self.end_headers()
            self.wfile.write(b"ok" if status < 300 else b"receiver says no")

        def log_message(self, *args):
            pass

    return Handler


def start_receiver(**options) -> Receiver:
    """Start a receiver on a free port in a daemon thread; stop it with stop_receiver."""
    receiver = Receiver(**options)
    receiver.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    receiver.server.daemon_threads = True
    threading.Thread(target=receiver.server.serve_forever, daemon=True).start()
    return receiver


def stop_receiver(receiver: Receiver) -> None:
    receiver.server.shutdown()
    receiver.server.server_close()
