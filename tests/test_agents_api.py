"""The anthropic and openai policies through their real SDKs over HTTP, against a local test server."""

from __future__ import annotations

import pytest

from engine.agents.format import answer_text, tool_call_text
from engine.agents.policies import load_policy
from engine.agents.rollout import run_episode
from engine.envs.layout import EnvSpec

from conftest import DATA
from http_peer import JsonPeer

WRITE = ("import pandas as pd; s = pd.read_csv('sample_submission.csv'); s['label'] = 'yes'; "
         "s.to_csv('submission.csv', index=False); print('written', len(s))")
REPLIES = [tool_call_text("python", {"code": WRITE}, "write a constant submission"), answer_text("done", "finish")]


class Server(JsonPeer):
    """Anthropic Messages API or OpenAI chat completions: the first request(s) fail (429 / 500), then the
    scripted react replies, chosen by how many assistant turns the request already holds."""

    def __init__(self, kind: str, fail_first: int = 1):
        super().__init__()
        self.kind, self.fail_first = kind, fail_first

    def answer(self, path: str, body: dict) -> tuple[int, dict, dict]:
        retry = {"retry-after": "0"}
        if self.fail_first > 0:
            self.fail_first -= 1
            return (429 if self.kind == "anthropic" else 500,
                    {"error": {"type": "rate_limit_error", "message": "slow down"}}, retry)
        n = len(self.requests)
        text = REPLIES[min(len([m for m in body["messages"] if m["role"] == "assistant"]), len(REPLIES) - 1)]
        if self.kind == "anthropic":
            return 200, {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": body["model"],
                         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                         "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}}, retry
        return 200, {"id": f"c{n}", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": text}}],
                     "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}, retry


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
    assert "<tool_call>" in first["system"][0]["text"] and first["max_tokens"] == 300
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}  # the react system prompt is cached
    assert [m["role"] for m in first["messages"]] == ["user"]
    second = ok[2]["body"]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[2]["content"].startswith("[observation]") and "written 40" in second[2]["content"]
    assert traj.state["usage"]["input_tokens"] == 22
    assert traj.state["usage"]["cost_usd"] == pytest.approx(2 * (11 * 3 + 7 * 15) / 1e6)  # claude-test: default price


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
    assert traj.state["usage"]["input_tokens"] == 22 and traj.state["usage"]["cost_usd"] == 0.0  # [openai] prices 0


def test_an_unreachable_endpoint_ends_the_episode_as_an_error(env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policy = load_policy("openai:m,base_url=http://127.0.0.1:9/v1")
    policy.client.client = policy.client.client.with_options(max_retries=0, timeout=2)
    traj = run_episode(env, policy, scaffold="react", max_turns=2)
    assert traj.status == "error" and "cannot reach http://127.0.0.1:9/v1" in traj.error
    assert not traj.grade["valid_submission"]
