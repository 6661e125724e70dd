"""A local JSON-over-HTTP peer on 127.0.0.1 for testing the real Anthropic / OpenAI SDKs (the outermost edge we
cannot reach from here). Subclasses implement ``answer(path, body) -> (status, payload, headers)``."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonPeer:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with peer.lock:
                    peer.requests.append({"path": self.path, "body": body, "headers": headers})
                    status, payload, extra = peer.answer(self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str, body: dict) -> tuple[int, dict, dict]:
        raise TypeError(f"{type(self).__name__} must define answer()")

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
