"""A local server of canned LLM answers on 127.0.0.1: no model behind it, it speaks the Anthropic Messages API
and the OpenAI chat-completions API so the real SDKs can be driven end to end without a network — by ``sandmle bench
synth`` (the LLM path's own cost, the answers instant) and by the tests (``tests/http_peer.py``). Not a product
part: a user's LLM is the real provider's API (:mod:`engine.llm`).

:class:`JsonPeer` is the bare JSON-over-HTTP server (subclasses implement ``answer``); :class:`CannedLLM` parses
either wire format into a :class:`CannedRequest`, asks ``reply(request)`` for the text, and answers in the same
format with token usage (about 4 characters per token). Like the Messages API it reports a cached system prompt:
the first request with a given system text writes it to the cache, later ones read it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Literal


class JsonPeer:
    """A threaded JSON-over-HTTP server on a free port of 127.0.0.1; every request is kept in ``requests``."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the caller's output clean
                pass

            def do_POST(self) -> None:
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

    def __enter__(self) -> "JsonPeer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class CannedRequest:
    api: Literal["anthropic", "openai"]
    model: str
    system: str
    turns: list[dict]
    #: the Messages API request marked its system prompt for caching
    cache_marked: bool = False

    @property
    def prompt(self) -> str:
        """The last user turn."""
        return next((t["content"] for t in reversed(self.turns) if t["role"] == "user"), "")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class CannedLLM(JsonPeer):
    """Answers both wire formats with ``reply(request)``; ``fail_first`` requests get a 429 (the SDK retries)."""

    def __init__(self, reply: Callable[[CannedRequest], str], *, fail_first: int = 0):
        super().__init__()
        self.reply, self.fail_first = reply, fail_first
        self.cached_systems: set[str] = set()

    def parse(self, path: str, body: dict) -> CannedRequest:
        if path.endswith("/chat/completions"):
            system = "\n\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
            turns = [m for m in body["messages"] if m["role"] != "system"]
            return CannedRequest("openai", body["model"], system, turns)
        raw = body.get("system", "")
        blocks = raw if isinstance(raw, list) else [{"type": "text", "text": raw}]
        return CannedRequest("anthropic", body["model"], "\n\n".join(b["text"] for b in blocks), body["messages"],
                              cache_marked=any("cache_control" in b for b in blocks))

    def answer(self, path: str, body: dict) -> tuple[int, dict, dict]:
        with self.lock:
            fail = self.fail_first > 0
            self.fail_first -= fail
        if fail:
            return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, \
                {"retry-after-ms": "10"}
        request = self.parse(path, body)
        text = self.reply(request)
        prompt_tokens = _tokens(request.prompt)
        out_tokens = _tokens(text)
        n = len(self.requests)
        if request.api == "openai":
            return 200, {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": request.model,
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": text}}],
                         "usage": {"prompt_tokens": prompt_tokens + _tokens(request.system),
                                   "completion_tokens": out_tokens,
                                   "total_tokens": prompt_tokens + _tokens(request.system) + out_tokens}}, {}
        with self.lock:
            seen = request.system in self.cached_systems
            if request.cache_marked:
                self.cached_systems.add(request.system)
        system_tokens = _tokens(request.system) if request.system else 0
        cache = {"cache_creation_input_tokens": system_tokens if request.cache_marked and not seen else 0,
                 "cache_read_input_tokens": system_tokens if request.cache_marked and seen else 0}
        return 200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": request.model,
                     "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": prompt_tokens + (0 if request.cache_marked else system_tokens),
                               "output_tokens": out_tokens, **cache}}, {}
