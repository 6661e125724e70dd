"""`sandmle envs add`: a hand-written generator goes through the same checks as synthesis — verified, or rejected
with a reason that names the cause — and the few-shot example programs all verify against their seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DATA
from http_peer import GENERATORS

CASES = [  # program, exit code, what the reason must name
    ("leaky_id_parcels.py", 1, "leakage: the id predicts the label (|Spearman| 0.8"),
    ("saturated_pressure.py", 1, "saturated: a reference scores 1"),
    ("unlearnable_coinflip.py", 1, "not learnable: the best reference"),
    ("raises_missing_column.py", 1, "generator.py failed (error): KeyError"),
    ("hangs_calibration.py", 1, "generator.py ran past the 4 s time limit and was stopped (timeout)"),
]


@pytest.fixture
def spoilage_cli(run_cli):
    assert run_cli("seeds", "import", str(DATA / "seeds" / "shipment-spoilage")).code == 0
    return run_cli


@pytest.mark.slow
def test_envs_add_verifies_a_good_program_and_names_the_cause_of_each_bad_one(spoilage_cli, store):
    good = spoilage_cli("envs", "add", "--seed", "shipment-spoilage", "--program",
                        str(GENERATORS / "good_tabular_coldchain.py"),
                        "--description", str(GENERATORS / "description_coldchain.md"), "--json")
    assert good.code == 0, good.err
    outcome = good.json()
    assert outcome["status"] == "verified" and outcome["trivial"] == pytest.approx(0.5) and outcome["strong"] > 0.6
    env = store.envs.get(outcome["env_id"])
    assert env["backend"] == "program" and env["title"] == "Cold-chain vaccine shipments: will a shipment arrive spoiled?"
    assert (Path(env["dir"]) / "generator.py").read_bytes() == (GENERATORS / "good_tabular_coldchain.py").read_bytes()
    assert (Path(env["dir"]) / "public" / "description.md").read_text() == \
        (GENERATORS / "description_coldchain.md").read_text()
    assert env["thresholds"]["gold"] >= env["thresholds"]["bronze"] > 0.5
    for name, code, cause in CASES:
        res = spoilage_cli("envs", "add", "--seed", "shipment-spoilage", "--program", str(GENERATORS / name),
                           "--timeout", "4")
        assert res.code == code, (name, res.out, res.err)
        assert res.out.startswith("rejected ") and cause in res.out, (name, res.out)
        env_id = res.out.split()[1].rstrip(":")
        assert store.envs.get(env_id)["status"] == "rejected" and cause in store.envs.get(env_id)["reason"]


def test_envs_add_refuses_bad_input_in_one_line(spoilage_cli, store, tmp_path):
    program = str(GENERATORS / "good_tabular_coldchain.py")
    res = spoilage_cli("envs", "add", "--seed", "shipment-spoilage", "--program", program, "--metric", "rmse")
    assert res.code == 2 and res.err.strip() == ("error: --metric: metric 'rmse' does not fit the blueprint's "
                                                 "'roc_auc' (prediction kind and direction)")
    res = spoilage_cli("envs", "add", "--seed", "shipment-spoilage", "--program", str(tmp_path / "nope.py"))
    assert res.code != 0 and "nope.py: cannot read the program" in res.err and "Traceback" not in res.err
    bad = tmp_path / "bad.py"
    bad.write_text("import requests\n" + (GENERATORS / "good_tabular_coldchain.py").read_text())
    res = spoilage_cli("envs", "add", "--seed", "shipment-spoilage", "--program", str(bad))
    assert res.code == 1 and "generator.py imports requests; only numpy" in res.out
    assert store.envs.count(status="verified") == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bike_docks", "recipe_cuisine", "panel_debris", "hive_piping"])
def test_every_few_shot_example_verifies_against_its_seed(name, seeded_store):
    from engine.config import Settings
    from engine.synthesis.add import add_program
    from engine.synthesis.fewshot import EXAMPLES

    example = EXAMPLES[name]
    outcome = add_program(seeded_store, example.seed_id, example.program(), settings=Settings())
    assert outcome.status == "verified", outcome.reason
    assert outcome.metric == example.metric


def test_envs_diversity_reports_domains_column_overlap_and_similarity(run_cli, store):
    import json

    from engine.synthesis.contracts import Scenario
    from engine.synthesis.diversity import fingerprint
    from http_peer import fixture

    cold = Scenario.parse(json.loads(fixture("scenario_coldchain.json")))
    tickets = Scenario.parse(json.loads(fixture("scenario_tickets.json")))
    for i, sc in enumerate((cold, cold.model_copy(update={"n_test": 300}), tickets)):
        store.envs.add({"id": f"env-{i}", "seed_id": None, "title": sc.title, "status": "verified",
                        "scenario": sc.for_prompt(), "fingerprint": fingerprint(sc), "modality": "tabular",
                        "task_type": "binary", "metric": "roc_auc", "lower_is_better": 0, "id_column": sc.id_column,
                        "target_columns": sc.target_columns})
    res = run_cli("envs", "diversity", "--json")
    assert res.code == 0, res.err
    d = res.json()
    assert (d["environments"], d["domains"], d["near_duplicate_pairs"], d["pairwise_over"]) == (3, 2, 1, 3)
    assert d["domain_counts"] == {"broadband customer support": 1, "pharmaceutical cold-chain logistics": 2}
    assert d["column_overlap_max"] == 1.0 and d["fingerprint_similarity_max"] == 1.0
    text = run_cli("envs", "diversity").out
    assert "3 environments · 2 distinct domains" in text and "near-duplicate pairs 1" in text
