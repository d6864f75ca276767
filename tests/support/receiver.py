"""A webhook receiver for tests: a threaded HTTP server on 127.0.0.1 that checks every
request's signature as a researcher's receiver should, and answers as it is told."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from webhooks.engine.signing import SIGNATURE_HEADER, SignatureError, signature_verify


@dataclass
class Received:
    at: float  # time.time() when it arrived
    body: dict
    headers: dict  # names in lower case (HTTP's are case-insensitive)
    signature_ok: bool
    signature_error: str = ""


@dataclass
class Receiver:
    """Answers `statuses` in turn (then 200 for ever) and records every request."""

    secret: str = ""
    statuses: list[int] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    port: int = 0
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        """Listen (on `port` when set: a receiver that comes back where it was)."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the name http.server calls
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver._record(raw, {k.lower(): v for k, v in self.headers.items()})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.end_headers()
                self.wfile.write(f"answered {status}".encode())

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _record(self, raw: bytes, headers: dict) -> None:
        now = time.time()
        try:
            signature_verify(self.secret, raw, headers.get(SIGNATURE_HEADER.lower(), ""), now=now)
            ok, error = True, ""
        except SignatureError as refused:
            ok, error = False, str(refused)
        self.requests.append(Received(now, json.loads(raw), headers, ok, error))
