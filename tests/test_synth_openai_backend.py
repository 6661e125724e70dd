"""The openai synthesis backend through the real openai SDK against a local Chat-Completions server."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai")

from test_anthropic_backend import MessagesServer  # noqa: E402  (same role logic, different wire format)

from engine.config import Settings  # noqa: E402


class ChatServer(MessagesServer):
    def answer(self, path, body):
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        status, payload, headers = super().answer(path, {"system": system, "model": body["model"],
                                                         "messages": [{"role": "user", "content": user}]})
        if status != 200:
            return status, {"error": {"message": "slow down", "type": "rate_limit"}}, headers
        text = payload["content"][0]["text"]
        return 200, {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4,
                               "total_tokens": (len(user) + len(text)) // 4}}, {}


@pytest.mark.slow
def test_openai_compatible_backend(seeded_store):
    from engine.synthesis.pipeline import synthesize

    seed = seeded_store.seeds.get("taxi-fare")
    with ChatServer(seed) as server:
        s = Settings()
        s.openai.base_url = server.url + "/v1"
        s.openai.model = "local-vllm-model"
        report = synthesize(seeded_store, "taxi-fare", 1, backend="openai", rng_seed=3, settings=s)
        paths = {r["path"] for r in server.requests}
    assert paths == {"/v1/chat/completions"}
    (o,) = report.outcomes
    assert o.status == "verified", o.reason
    calls = [a for a in seeded_store.envs.attempts(env_id=o.env_id) if a["usage"].get("backend") == "openai"]
    assert [a["verdict"] for a in calls if a["role"] == "analyst"] == ["retry", "ok"]
    assert all(a["usage"]["model"] == "local-vllm-model" and a["usage"]["input_tokens"] > 0 for a in calls)
    grader = next(a for a in calls if a["role"] == "grader")
    assert json.loads(grader["output"]) == {"metric": "rmse"}
