"""Synthesis by LLM agents, end to end: the real Anthropic and OpenAI SDKs talk over HTTP to a local stand-in
server (tests/http_peer.py) that answers each role from hand-written fixtures (tests/data/generators/): typed
answers validated against their contracts, generator programs run in the sandbox, and every refused program sent
back to the Data engineer with its evidence; after K refused programs the Designer is asked again."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import DATA
from http_peer import GENERATORS, RolePeer, fixture

from engine.config import Settings


def as_json(data: dict) -> str:
    return "Here it is.\n```json\n" + json.dumps(data, indent=1) + "\n```"


def program(name: str) -> str:
    return as_json({"program": fixture(name), "notes": f"the program of {name}"})


def description(name: str) -> str:
    return as_json({"markdown": fixture(name)})


def scenario(name: str) -> str:
    return as_json(json.loads(fixture(name)))


METRIC = as_json({"metric": "roc_auc"})
APPROVE = as_json({"ok": True, "problems": []})


def settings_for(url: str, api: str, **synthesis) -> Settings:
    s = Settings()
    if api == "anthropic":
        s.anthropic.base_url, s.anthropic.model, s.anthropic.max_retries = url, "claude-sonnet-4-5", 2
    else:
        s.openai.base_url, s.openai.model = url + "/v1", "local-vllm-model"
        s.openai.price_input_per_mtok, s.openai.price_output_per_mtok = 0.5, 1.5
    for key, value in {"max_retries": 2, "ladder_seeds": 2, **synthesis}.items():
        setattr(s.synthesis, key, value)
    return s


@pytest.fixture
def spoilage_store(store):
    from engine.seeds.load import import_seeds

    import_seeds(store, DATA / "seeds" / "shipment-spoilage")
    return store


@pytest.mark.slow
def test_engineer_gets_the_evidence_of_each_refused_program_over_the_messages_api(spoilage_store, monkeypatch):
    from engine.synthesis.pipeline import synthesize

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    bad_blueprint = json.loads(fixture("blueprint_shipment.json")) | {"n_classes": "two"}
    script = {
        "analyst": [as_json(bad_blueprint), as_json(json.loads(fixture("blueprint_shipment.json")))],
        "designer": [scenario("scenario_coldchain.json")],
        "grader": [METRIC],
        "engineer": [program("raises_missing_column.py"), program("leaky_id_parcels.py"),
                     program("saturated_pressure.py"), program("good_tabular_coldchain.py")],
        "describer": [description("description_coldchain.md")],
        "reviewer": [APPROVE],
    }
    with RolePeer(script, fail_first=1) as server:
        report = synthesize(spoilage_store, "shipment-spoilage", 1, backend="anthropic", rng_seed=4,
                            settings=settings_for(server.url, "anthropic", max_programs=4, generator_timeout_s=60))
    (outcome,) = report.outcomes
    assert outcome.status == "verified", outcome.reason
    env = spoilage_store.envs.get(outcome.env_id)
    generator = (GENERATORS / "good_tabular_coldchain.py").read_bytes()
    assert (Path(env["dir"]) / "generator.py").read_bytes() == generator
    assert env["backend"] == "anthropic" and env["scenario"]["domain"] == "pharmaceutical cold-chain logistics"
    assert env["title"] == "Predict spoiled vaccine shipments from cold-chain logs"

    # the schema-invalid blueprint went back with the validation error
    first, second = server.by_role["analyst"]
    assert "Output schema (Blueprint, JSON Schema)" in first.system and '"n_classes"' in first.system
    assert "n_classes: Input should be a valid integer" in second.prompt

    # each refused program's evidence is in the next request to the engineer, next to that program
    eng = server.by_role["engineer"]
    assert len(eng) == 4 and "refused" not in eng[0].prompt
    assert fixture("raises_missing_column.py") in eng[1].prompt
    assert "Refused at the run stage" in eng[1].prompt and "KeyError" in eng[1].prompt and "batch_id" in eng[1].prompt
    assert "Traceback" in eng[1].prompt
    assert "leakage: the id predicts the label (|Spearman| 0.8" in eng[2].prompt
    assert "Leakage probe fired: the id predicts the label" in eng[2].prompt and "id_label_corr = 0.8" in eng[2].prompt
    # the strong reference reaches the metric's best within 1% (how close depends on the ladder's own seeds)
    assert re.search(r"saturated: a reference scores (1|0\.99\d*), \(nearly\) the metric's best", eng[3].prompt)
    assert re.search(r"strong, seed 0: (1|0\.99\d*)\n", eng[3].prompt) and "Paired bootstrap 95% interval" in eng[3].prompt
    assert len(server.by_role["designer"]) == 1

    attempts = spoilage_store.envs.attempts(env_id=outcome.env_id)
    runs = [a for a in attempts if a["role"] == "engineer" and a["prompt"].startswith("run generator.py")]
    assert [a["verdict"] for a in runs] == ["refused", "refused", "refused", "ok"]
    assert json.loads(runs[1]["output"])["evidence"]["leakage"]["id_label_corr"] > 0.45
    assert outcome.programs == 4

    # the SDK retried the 429 itself; every call is priced; the stable system prompt is cached after its first use
    calls = [a for a in attempts if a["usage"].get("provider") == "anthropic"]
    assert calls[0]["usage"]["retries"] == 1
    assert all(a["usage"]["cost_usd"] > 0 and a["usage"]["model"] == "claude-sonnet-4-5" for a in calls)
    assert all(r.cache_marked for r in eng)
    eng_usage = [a["usage"] for a in calls if a["role"] == "engineer"]
    assert eng_usage[0]["cache_write_tokens"] > 1000 and eng_usage[0]["cache_read_tokens"] == 0
    assert all(u["cache_read_tokens"] == eng_usage[0]["cache_write_tokens"] for u in eng_usage[1:])
    usage = report.summary()["usage"]
    assert usage["by_role"]["engineer"]["calls"] == 4 and usage["by_role"]["analyst"]["calls"] == 2
    assert usage["cost_usd"] > 0 and usage["cost_per_verified_usd"] == pytest.approx(usage["cost_usd"])
    run = spoilage_store.runs.get(report.run_id)
    assert run["summary"]["usage"]["cost_usd"] == pytest.approx(usage["cost_usd"])


@pytest.mark.slow
def test_after_k_refused_programs_the_designer_is_asked_again_over_the_chat_api(store):
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize

    load_shipped(store)
    script = {
        "analyst": [as_json(json.loads(fixture("blueprint_pizza.json")))],
        "designer": [scenario("scenario_turbine_notes.json"), scenario("scenario_tickets.json")],
        "grader": [METRIC],
        "engineer": [program("hangs_calibration.py"), program("raises_missing_column.py"),
                     program("good_text_tickets.py")],
        "describer": [description("description_tickets.md")],
        "reviewer": [as_json({"ok": False, "problems": ["the description promises a `weekday` column the data "
                                                        "lacks"]}), APPROVE],
    }
    with RolePeer(script) as server:
        report = synthesize(store, "pizza-requests", 1, backend="openai", rng_seed=2,
                            settings=settings_for(server.url, "openai", max_programs=2, generator_timeout_s=3))
        paths = {r["path"] for r in server.requests}
    assert paths == {"/v1/chat/completions"}
    (outcome,) = report.outcomes
    assert outcome.status == "verified", outcome.reason
    env = store.envs.get(outcome.env_id)
    assert (Path(env["dir"]) / "generator.py").read_bytes() == \
        (GENERATORS / "good_text_tickets.py").read_bytes()

    eng = server.by_role["engineer"]
    assert len(eng) == 3
    assert "ran past the 3 s time limit and was stopped (timeout)" in eng[1].prompt
    assert fixture("hangs_calibration.py") in eng[1].prompt
    # two refused programs (K = 2): the designer is asked again, with both reasons; the engineer starts afresh
    first, second = server.by_role["designer"]
    assert "refused" not in first.prompt
    assert "Earlier scenarios for this task were refused" in second.prompt
    assert "Predict gearbox repairs from technician notes" in second.prompt
    assert "time limit" in second.prompt and "KeyError" in second.prompt
    assert "Predict which support tickets get escalated" in eng[2].prompt and "refused" not in eng[2].prompt
    # the hanging program was stopped by the timeout, not by the test
    runs = [a for a in store.envs.attempts(env_id=outcome.env_id)
            if a["role"] == "engineer" and a["prompt"].startswith("run generator.py")]
    assert [a["verdict"] for a in runs] == ["refused", "refused", "ok"]
    assert 3 <= runs[0]["wall_s"] < 20 and "timeout" in runs[0]["feedback"]
    # the reviewer's reasons went back to the describer
    assert len(server.by_role["describer"]) == 2
    assert "weekday" in server.by_role["describer"][1].prompt
    # the local endpoint is priced as configured
    usage = report.summary()["usage"]
    assert usage["by_role"]["designer"]["calls"] == 2 and usage["cost_usd"] > 0


def test_budget_stops_the_run_cleanly(spoilage_store, monkeypatch):
    from engine.synthesis.pipeline import synthesize

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = {"analyst": [as_json(json.loads(fixture("blueprint_shipment.json")))],
              "designer": [scenario("scenario_coldchain.json")], "grader": [METRIC],
              "engineer": [program("raises_missing_column.py")], "describer": [description("description_coldchain.md")],
              "reviewer": [APPROVE]}
    with RolePeer(script) as server:
        report = synthesize(spoilage_store, "shipment-spoilage", 2, backend="anthropic", rng_seed=1,
                            max_cost_usd=0.01, settings=settings_for(server.url, "anthropic", max_programs=1))
    assert report.stopped and "cost budget of $0.01 spent" in report.stop_reason
    assert report.outcomes == [] and spoilage_store.envs.count() == 0
    run = spoilage_store.runs.get(report.run_id)
    assert run["status"] == "stopped" and run["summary"]["usage"]["cost_usd"] >= 0.01
    # the first (expensive) call of each environment happened, none after the budget was gone
    assert len(server.by_role["analyst"]) + len(server.by_role["designer"]) <= 4


def test_persistent_garbage_is_rejected_after_the_retries(spoilage_store, monkeypatch):
    from engine.synthesis.pipeline import synthesize

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with RolePeer({"analyst": ["Sure! The blueprint keeps the imbalance. {not json at all"]}) as server:
        report = synthesize(spoilage_store, "shipment-spoilage", 1, backend="anthropic", rng_seed=6,
                            settings=settings_for(server.url, "anthropic"))
    (outcome,) = report.outcomes
    assert outcome.status == "rejected" and outcome.reason.startswith("analyst: no acceptable answer after 3 attempts")
    attempts = spoilage_store.envs.attempts(env_id=outcome.env_id)
    assert [a["verdict"] for a in attempts] == ["retry", "retry", "reject"]
    assert "the answer holds no JSON object" in attempts[0]["feedback"] and "Sure!" in attempts[0]["output"]
    assert "the answer holds no JSON object" in server.by_role["analyst"][1].prompt
    assert spoilage_store.envs.get(outcome.env_id)["status"] == "rejected"


def test_claude_needs_a_key(seeded_store, monkeypatch):
    from engine.errors import SandmleError
    from engine.synthesis.pipeline import synthesize

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SandmleError, match="ANTHROPIC_API_KEY"):
        synthesize(seeded_store, "tabular-binary-manufacturing", 1, backend="anthropic", settings=Settings())
    assert seeded_store.envs.count() == 0
