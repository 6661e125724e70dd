"""The anthropic synthesis backend through the REAL anthropic SDK against a local HTTP server on 127.0.0.1 that
speaks the Messages API: a 429 answered by the SDK's retry, a malformed answer sent back to the role, usage and
cost recorded per call, and a verified environment at the end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.config import Settings
from http_peer import JsonPeer
from engine.synthesis.blueprint import Blueprint, analyze
from engine.synthesis.designer import design


class MessagesServer(JsonPeer):
    """A Messages-API peer: answers each role from the request's system prompt, with scripted faults."""

    def __init__(self, seed: dict):
        super().__init__()
        self.seed = seed
        self.faults = {"first_request_429": True, "analyst_malformed": True}

    def answer(self, path: str, body: dict):
        if self.faults.pop("first_request_429", False):
            return 429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, \
                {"retry-after-ms": "20"}
        system = body.get("system", "")
        role = next(r for r in ("analyst", "designer", "engineer", "grader") if f"the {r.capitalize()}" in system
                    or (r == "engineer" and "Data engineer" in system))
        bp = analyze(self.seed)
        if role == "analyst":
            if self.faults.pop("analyst_malformed", False):
                text = "Sure! The blueprint keeps the imbalance and the interactions."
            else:
                text = "```json\n" + json.dumps(bp.to_dict()) + "\n```"
        elif role == "designer":
            sc = design(Blueprint.from_dict(bp.to_dict()), self.seed, np.random.default_rng(len(self.requests)))
            sc["domain"] = "llm-invented " + sc["domain"]
            text = "Here is a new scenario:\n```json\n" + json.dumps(sc, default=float) + "\n```"
        elif role == "engineer":
            text = json.dumps({"signal": 1.3, "noise": 0.4, "label_noise": 0.02, "missing_rate": 0.0, "shift": 0.0})
        else:
            text = json.dumps({"metric": bp.metric})
        prompt = body["messages"][0]["content"]
        return 200, {
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4},
        }, {}


@pytest.fixture
def seed_row(seeded_store):
    return seeded_store.seeds.get("tabular-binary-manufacturing")


def _settings(url: str) -> Settings:
    s = Settings()
    s.anthropic.base_url = url
    s.anthropic.model = "claude-sonnet-4-5"
    s.anthropic.max_retries = 2
    s.synthesis.max_retries = 2
    return s


@pytest.mark.slow
def test_anthropic_backend_synthesizes_through_the_sdk(seeded_store, seed_row, monkeypatch):
    from engine.synthesis.pipeline import synthesize

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MessagesServer(seed_row) as server:
        report = synthesize(seeded_store, "tabular-binary-manufacturing", 1, backend="anthropic", rng_seed=5,
                            settings=_settings(server.url))
        paths = {r["path"] for r in server.requests}
        first = server.requests[0]["body"]
    assert paths == {"/v1/messages"}
    assert first["model"] == "claude-sonnet-4-5" and first["messages"][0]["role"] == "user"
    # 1 rate-limited + 2 analyst (malformed, then good) + designer + grader + engineer
    assert len(server.requests) == 6
    (outcome,) = report.outcomes
    assert outcome.status == "verified", outcome.reason
    env = seeded_store.envs.get(outcome.env_id)
    assert env["backend"] == "anthropic" and env["scenario"]["domain"].startswith("llm-invented")
    attempts = seeded_store.envs.attempts(env_id=outcome.env_id)
    analyst = [a for a in attempts if a["role"] == "analyst"]
    assert [a["verdict"] for a in analyst] == ["retry", "ok"]
    assert "no JSON object" in analyst[0]["feedback"]
    assert "Sure! The blueprint" in analyst[0]["output"]
    # the first call was retried by the SDK after the 429, and every call has usage and cost
    assert analyst[0]["usage"]["retries"] == 1
    calls = [a for a in attempts if a["usage"].get("backend") == "anthropic"]
    assert sorted(a["role"] for a in calls) == ["analyst", "analyst", "designer", "engineer", "grader"]
    for a in calls:
        assert a["usage"]["input_tokens"] > 0 and a["usage"]["output_tokens"] > 0
        assert a["usage"]["cost_usd"] > 0 and a["usage"]["model"] == "claude-sonnet-4-5"
    assert "Blueprint:" in next(a["prompt"] for a in attempts if a["role"] == "designer")
    assert "You are the Designer" in next(r["body"]["system"] for r in server.requests[1:]
                                          if "Designer" in r["body"]["system"])


def test_anthropic_backend_gives_up_on_persistent_garbage(seeded_store, seed_row, monkeypatch):
    from engine.synthesis.pipeline import synthesize

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with MessagesServer(seed_row) as server:
        server.faults = {}
        orig = server.answer

        def garbage(path, body):
            status, payload, headers = orig(path, body)
            payload["content"] = [{"type": "text", "text": "{not json at all"}]
            return status, payload, headers

        server.answer = garbage
        report = synthesize(seeded_store, "tabular-binary-manufacturing", 1, backend="anthropic", rng_seed=6,
                            settings=_settings(server.url))
    (outcome,) = report.outcomes
    assert outcome.status == "rejected"
    assert "analyst" in outcome.reason
    env = seeded_store.envs.get(outcome.env_id)
    assert env["status"] == "rejected" and "analyst" in env["reason"]
    verdicts = [a["verdict"] for a in seeded_store.envs.attempts(env_id=outcome.env_id)]
    assert verdicts == ["retry", "retry", "reject"]


def test_anthropic_backend_needs_a_key(seeded_store, monkeypatch):
    from engine.errors import SynthesisError
    from engine.synthesis.pipeline import synthesize

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SynthesisError, match="ANTHROPIC_API_KEY"):
        synthesize(seeded_store, "tabular-binary-manufacturing", 1, backend="anthropic", settings=Settings())
    assert seeded_store.envs.count() == 0
