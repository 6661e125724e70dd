"""The exploit audit at every door: `sandmle envs add` (the issue's reproduction on tabular-binary-manufacturing),
synthesis by an LLM engineer (the refusal goes back to it), a folder given to grade/eval, `seeds import` of a
competition folder; `sandmle envs audit` on stored environments. (No false alarm on the shipped seeds' procedural
environments, at the bronze threshold: tests/test_boards.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import realdata
from conftest import DATA
from http_peer import GENERATORS, RolePeer, fixture
from test_audit import binary_env

LEAKY = GENERATORS / "leaky_manufacturing.py"


def variant(tmp_path: Path, leak: str) -> Path:
    """leaky_manufacturing.py with LEAK set (a program of its own, as a user would write it)."""
    path = tmp_path / f"gen_{leak or 'good'}.py"
    path.write_text(LEAKY.read_text().replace('\nLEAK = ""', f'\nLEAK = "{leak}"', 1))
    return path


@pytest.mark.slow
def test_envs_add_refuses_each_way_of_leaking_the_answers_with_the_file_and_column(run_cli, seeded_store, tmp_path):
    store = seeded_store
    seed = "tabular-binary-manufacturing"
    add = ("envs", "add", "--seed", seed, "--program")
    good = run_cli(*add, str(variant(tmp_path, "")), "--json")
    assert good.code == 0, good.out + good.err
    verified = store.envs.get(good.json()["env_id"])
    report = verified["verification"]["report"]["audit"]
    assert report["findings"] == [] and report["attempts"] >= 8 and report["bar"]["medal"] > 0.5
    shown = run_cli("envs", "show", verified["id"]).out
    assert "  exploit audit: nothing found in " in shown and "of the way to the bar" in shown
    cases = {  # LEAK → what the reason must name
        "csv": "public/customer_reference.csv column 'ref_flag' (its values) scores 1 on the hidden answers",
        "json": "public/crm_export.json column '$.accounts.<id>.status' (its values relabelled) scores 1",
        "sample": "public/sample_submission.csv column 'failed' (its values) scores 0.9",
        "monotone": "public/test.csv column 'inspection_score' (its values) scores 0.9",
        "rows": "public/test.csv column 'row position'",
        "sidecar_names": "public/test.csv column 'part_id: its letters'",
    }
    for leak, cause in cases.items():
        res = run_cli(*add, str(variant(tmp_path, leak)))
        assert res.code == 1 and res.out.startswith("rejected ") and f"exploit audit: {cause}" in res.out, (leak, res.out)
        env = store.envs.get(res.out.split()[1].rstrip(":"))
        assert env["status"] == "rejected" and cause in env["reason"]
    # the same data, with a description that lists the test ids and their results: refused after it is written
    answers = pd.read_csv(Path(verified["dir"]) / "private" / "answers.csv", dtype=str)
    description = (Path(verified["dir"]) / "public" / "description.md").read_text() + "\n## QA results\n\n" + \
        "\n".join(f"- {i}: {'fail' if v == '1' else 'pass'}" for i, v in zip(answers["part_id"], answers["failed"]))
    (tmp_path / "desc.md").write_text(description)
    res = run_cli(*add, str(variant(tmp_path, "")), "--description", str(tmp_path / "desc.md"))
    assert res.code == 1 and "exploit audit: public/description.md column 'the token after each test id'" in res.out
    assert store.envs.count(status="verified") == 1
    audit = run_cli("envs", "audit")
    assert audit.code == 0 and findings(audit.out) == ["audited 1 environment: 0 with findings (0 in all)"]
    assert "lookup probe: 0 datasets readable from data packages" in audit.out and "found in none" in audit.out


@pytest.mark.slow
def test_an_llm_engineer_gets_the_audit_back_and_fixes_its_program(store, monkeypatch):
    from engine.seeds.load import import_seeds
    from engine.synthesis.pipeline import synthesize
    from test_synth_agents import APPROVE, METRIC, as_json, description, program, scenario, settings_for

    import_seeds(store, DATA / "seeds" / "shipment-spoilage")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    good = fixture("good_tabular_coldchain.py")
    written = 'os.path.join(private, "answers.csv"), index=False)'
    leaky = good.replace(written, written + '\n    pd.read_csv(os.path.join(private, "answers.csv")).rename(columns={'
                         '"spoiled": "flag"}).to_csv(os.path.join(public, "lookup.csv"), index=False)')
    assert leaky != good
    script = {"analyst": [as_json(json.loads(fixture("blueprint_shipment.json")))],
              "designer": [scenario("scenario_coldchain.json")], "grader": [METRIC],
              "engineer": [as_json({"program": leaky, "notes": "with a lookup table"}), program("good_tabular_coldchain.py")],
              "describer": [description("description_coldchain.md")], "reviewer": [APPROVE]}
    with RolePeer(script) as server:
        report = synthesize(store, "shipment-spoilage", 1, backend="anthropic", rng_seed=4,
                            settings=settings_for(server.url, "anthropic", max_programs=3, generator_timeout_s=60))
    (outcome,) = report.outcomes
    assert outcome.status == "verified" and outcome.programs == 2, outcome.reason
    second = server.by_role["engineer"][1].prompt
    assert "exploit audit: public/lookup.csv column 'flag' (its values) scores 1 on the hidden answers" in second
    assert not (Path(store.envs.get(outcome.env_id)["dir"]) / "public" / "lookup.csv").exists()


def test_envs_audit_lists_findings_exits_1_and_rejects(run_cli, store, tmp_path):
    env, answers = binary_env(tmp_path)
    folder = store.data_dir / "envs" / "parts-1"
    shutil.copytree(env, folder)
    row = {"seed_id": None, "title": "Parts", "status": "verified", "split": "train", "modality": "tabular",
           "task_type": "binary", "metric": "roc_auc", "lower_is_better": 0, "id_column": "part_id",
           "target_columns": ["failed"], "thresholds": {"gold": 0.8, "silver": 0.78, "bronze": 0.75, "median": 0.7},
           "verification": {"report": {"means": {"strong": 0.78, "trivial": 0.5}}}}
    store.envs.add({**row, "id": "parts-1", "dir": str(folder)})
    clean = run_cli("envs", "audit", "parts-1")
    assert clean.code == 0 and findings(clean.out) == ["audited 1 environment: 0 with findings (0 in all)"]
    answers.rename(columns={"failed": "ref"}).to_csv(folder / "public" / "lookup.csv", index=False)
    res = run_cli("envs", "audit")
    assert res.code == 1
    lines = findings(res.out)
    assert lines[0].startswith("parts-1: public/lookup.csv column 'ref' (its values) scores 1 on the hidden answers "
                               "(bronze 0.75, strong reference 0.78)")
    assert lines[1].startswith("parts-1: undeclared public file public/lookup.csv")
    assert lines[-1] == "audited 1 environment: 1 with findings (2 in all)"
    data = run_cli("envs", "audit", "--json")
    assert data.code == 1
    (entry,) = data.json()
    assert [f["kind"] for f in entry["findings"]] == ["leak", "undeclared"] and entry["rejected"] is False
    assert entry["findings"][0]["file"] == "public/lookup.csv" and entry["findings"][0]["column"] == "ref"
    rejected = run_cli("envs", "audit", "parts-1", "--reject")
    assert rejected.code == 1 and rejected.out.strip().endswith("1 with findings (2 in all), 1 marked rejected")
    stored = store.envs.get("parts-1")
    assert stored["status"] == "rejected" and stored["reason"].startswith("exploit audit: public/lookup.csv column")
    assert run_cli("envs", "audit").out.strip() == "audited 0 environments: 0 with findings (0 in all)"
    bad = run_cli("envs", "audit", str(tmp_path))
    assert bad.code != 0 and "envs audit reads stored environments" in bad.err and "Traceback" not in bad.err


def test_a_leaky_folder_is_refused_by_grade_and_eval(run_cli, tmp_path):
    folder = tmp_path / "tiny"
    shutil.copytree(DATA / "envs" / "tiny-tabular", folder)
    answers = pd.read_csv(folder / "private" / "answers.csv")
    sub = tmp_path / "sub.csv"
    answers.to_csv(sub, index=False)
    assert run_cli("grade", str(folder), str(sub), "--json").code == 0
    answers.rename(columns={"label": "outcome"}).to_csv(folder / "public" / "extra.csv", index=False)
    res = run_cli("grade", str(folder), str(sub))
    assert res.code != 0 and "Traceback" not in res.err
    assert "environment folder tiny-tabular refused by the exploit audit: public/extra.csv column 'outcome'" in res.err


def test_seeds_import_of_a_leaky_competition_folder_stores_nothing(run_cli, tmp_path):
    folder = realdata.breast_cancer(tmp_path)
    assert run_cli("seeds", "import", str(folder)).code == 0  # a clean competition passes
    leaky = realdata.breast_cancer(tmp_path / "b", "cancer-leak")
    shutil.copy(leaky / "prepared" / "private" / "test.csv", leaky / "prepared" / "public" / "answer.csv")
    res = run_cli("seeds", "import", str(leaky))
    assert res.code != 0 and "Traceback" not in res.err
    assert "competition mlebench-cancer-leak refused by the exploit audit: public/answer.csv column" in res.err
    assert "cancer-leak" not in [s["id"] for s in run_cli("seeds", "list", "--json").json()]
    eval_res = run_cli("grade", str(leaky), str(leaky / "prepared" / "public" / "sample_submission.csv"))
    assert eval_res.code != 0 and "refused by the exploit audit" in eval_res.err


def test_envs_audit_reruns_the_verifiers_leakage_probes_too(run_cli, store, tmp_path):
    env, _ = binary_env(tmp_path)
    train = pd.read_csv(env / "public" / "train.csv")
    order = train["failed"].rank(method="first").astype(int).to_numpy()  # ids numbered in the order of the label
    train.assign(part_id=[f"P{k:06d}" for k in order]).to_csv(env / "public" / "train.csv", index=False)
    folder = store.data_dir / "envs" / "parts-2"
    shutil.copytree(env, folder)
    store.envs.add({"id": "parts-2", "seed_id": None, "title": "Parts", "status": "verified", "split": "train",
                    "modality": "tabular", "task_type": "binary", "metric": "roc_auc", "lower_is_better": 0,
                    "id_column": "part_id", "target_columns": ["failed"], "dir": str(folder),
                    "thresholds": {"gold": 0.8, "silver": 0.78, "bronze": 0.75, "median": 0.7}})
    res = run_cli("envs", "audit", "parts-2")
    assert res.code == 1 and "parts-2: verifier probe: the id predicts the label (|Spearman| 0.8" in res.out
    assert res.out.strip().endswith("audited 1 environment: 1 with findings (1 in all)")


def findings(out: str) -> list[str]:
    """`envs audit`'s lines but the one per environment that says what the lookup probe saw."""
    return [line for line in out.strip().splitlines() if ": lookup probe: " not in line]


def test_envs_audit_exits_1_on_a_file_too_big_to_audit(run_cli, store, tmp_path, monkeypatch):
    from engine.grading.audit import sources

    env, answers = binary_env(tmp_path)
    folder = store.data_dir / "envs" / "parts-1"
    shutil.copytree(env, folder)
    (folder / "private" / "grade.json").write_text(json.dumps({**json.loads((folder / "private" / "grade.json")
                                                    .read_text()), "public_files": ["*.csv", "*.md", "notes.txt"]}))
    (folder / "public" / "notes.txt").write_text("shift notes\n" * 400)
    row = {"seed_id": None, "title": "Parts", "status": "verified", "split": "train", "modality": "tabular",
           "task_type": "binary", "metric": "roc_auc", "lower_is_better": 0, "id_column": "part_id",
           "target_columns": ["failed"], "thresholds": {"gold": 0.8, "silver": 0.78, "bronze": 0.75, "median": 0.7},
           "verification": {"report": {"means": {"strong": 0.78, "trivial": 0.5}}}}
    store.envs.add({**row, "id": "parts-1", "dir": str(folder)})
    assert run_cli("envs", "audit", "parts-1").code == 0
    monkeypatch.setattr(sources, "MAX_BYTES", 2048)
    res = run_cli("envs", "audit", "parts-1")
    assert res.code == 1, res.out
    assert findings(res.out) == [
        "parts-1: public/notes.txt not audited (larger than 2 KB and not a table, which is read in chunks): not verified",
        "audited 1 environment: 1 with findings (1 in all)"]
