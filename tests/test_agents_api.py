"""The anthropic and openai policies through their real SDKs over HTTP, against a local test server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import DATA
from engine.agents.format import answer_text, tool_call_text
from engine.agents.policy import load_policy
from engine.agents.rollout import run_episode
from engine.environment import EnvSpec

WRITE = ("import pandas as pd; s = pd.read_csv('sample_submission.csv'); s['label'] = 'yes'; "
         "s.to_csv('submission.csv', index=False); print('written', len(s))")
REPLIES = [tool_call_text("python", {"code": WRITE}, "write a constant submission"), answer_text("done", "finish")]


class Server:
    def __init__(self, kind: str, fail_first: int = 1):
        self.kind, self.requests, self.fail_first = kind, [], fail_first
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append({"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}})
                if outer.fail_first > 0:
                    outer.fail_first -= 1
                    self._send(429 if outer.kind == "anthropic" else 500, {"error": {"type": "rate_limit_error",
                                                                                      "message": "slow down"}})
                    return
                n = len(outer.requests)
                text = REPLIES[min(len([m for m in self._msgs(body) if m["role"] == "assistant"]), len(REPLIES) - 1)]
                if outer.kind == "anthropic":
                    self._send(200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                                     "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                     "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}})
                else:
                    self._send(200, {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}],
                                     "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})

            def _msgs(self, body):
                return body["messages"]

            def _send(self, code, data):
                raw = json.dumps(data).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def env():
    return EnvSpec.from_dir(DATA / "envs" / "tiny-tabular")


def test_anthropic_policy_runs_a_react_episode_over_http(env, store, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with Server("anthropic") as srv:
        policy = load_policy(f"anthropic:claude-test,base_url={srv.url},max_tokens=300")
        assert policy.name == "anthropic:claude-test"
        traj = run_episode(env, policy, scaffold="react", store=store, max_turns=4)
    assert traj.terminated and traj.grade["valid_submission"] and traj.status == "done"
    assert traj.reward > 0.2
    ok = [r for r in srv.requests]
    assert len(ok) == 3  # one 429 retried by the SDK, then two turns
    first = ok[1]["body"]
    assert ok[1]["path"] == "/v1/messages" and "test-key" in ok[1]["headers"].get("x-api-key", ok[1]["headers"].get("authorization", ""))
    assert ok[1]["headers"]["x-stainless-retry-count"] == "1"  # the SDK retried the 429 itself
    assert "<tool_call>" in first["system"] and first["max_tokens"] == 300
    assert [m["role"] for m in first["messages"]] == ["user"]
    second = ok[2]["body"]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[2]["content"].startswith("[observation]") and "written 40" in second[2]["content"]
    assert traj.state["usage"]["input_tokens"] == 22


def test_anthropic_policy_needs_a_key(monkeypatch):
    from engine.errors import SandmleError

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SandmleError, match="ANTHROPIC_API_KEY"):
        load_policy("anthropic:claude-test")


def test_openai_compatible_policy_runs_a_react_episode_over_http(env, store, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with Server("openai") as srv:
        policy = load_policy(f"openai:qwen-test,base_url={srv.url}/v1,temperature=0.2")
        traj = run_episode(env, policy, scaffold="react", store=store, max_turns=4, rng_seed=3)
    assert traj.terminated and traj.grade["valid_submission"]
    bodies = [r["body"] for r in srv.requests]
    assert srv.requests[-1]["path"] == "/v1/chat/completions" and len(bodies) == 3  # a 500 retried
    assert bodies[1]["messages"][0]["role"] == "system" and bodies[1]["temperature"] == 0.2
    assert bodies[1]["seed"] == 3000 and srv.requests[1]["headers"]["authorization"] == "Bearer sk-test"
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user"]


def test_an_unreachable_endpoint_ends_the_episode_as_an_error(env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policy = load_policy("openai:m,base_url=http://127.0.0.1:9/v1")
    policy.client = policy.client.with_options(max_retries=0, timeout=2)
    traj = run_episode(env, policy, scaffold="react", max_turns=2)
    assert traj.status == "error" and "endpoint error" in traj.error and not traj.grade["valid_submission"]
