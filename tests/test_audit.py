"""The exploit audit on hand-made environment folders: every way of hiding the answers in what an agent can read
is refused with the file and the column, and clean environments (strong legit features included) pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import DATA
from engine.envs.layout import GradeSpec
from engine.grading.audit import audit, declared_files

AUC = GradeSpec("roc_auc", False, "part_id", ["failed"], ["failed"], classes=[0, 1], task_type="binary")
#: what a verified environment of this kind reaches (its board's bronze threshold and the strong reference)
BRONZE, STRONG = 0.80, 0.78


def binary_env(root: Path, n_train: int = 160, n_test: int = 240, seed: int = 0) -> tuple[Path, pd.DataFrame]:
    """A clean binary environment: six readings (r_00 carries most of the signal), a category, the answers."""
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    frame = pd.DataFrame({f"r_{j:02d}": rng.normal(0, 1, n).round(4) for j in range(6)})
    frame["tool"] = rng.choice(["carbide", "ceramic", "hss"], n)
    risk = 1.2 * frame["r_00"] - 0.5 * frame["r_01"] + rng.normal(0, 1, n)
    y = (risk > np.quantile(risk, 0.6)).astype(int).to_numpy()
    frame.insert(0, "part_id", [f"P{v:06d}" for v in rng.choice(900_000, n, replace=False)])
    env = root / "env"
    (env / "public").mkdir(parents=True)
    (env / "private").mkdir()
    train, test = frame.iloc[:n_train].assign(failed=y[:n_train]), frame.iloc[n_train:]
    answers = pd.DataFrame({"part_id": test["part_id"].to_numpy(), "failed": y[n_train:]})
    train.to_csv(env / "public" / "train.csv", index=False)
    test.to_csv(env / "public" / "test.csv", index=False)
    answers.assign(failed=0.5).to_csv(env / "public" / "sample_submission.csv", index=False)
    answers.to_csv(env / "private" / "answers.csv", index=False)
    (env / "public" / "description.md").write_text("# Parts\n\nPredict `failed` for each part of test.csv.\n")
    (env / "private" / "grade.json").write_text(json.dumps(AUC.to_dict()))
    return env, answers


def run(env: Path, spec: GradeSpec = AUC, medal: float | None = BRONZE, strong: float | None = STRONG):
    return audit(env, spec, medal=medal, strong=strong)


def leaks(report) -> list[tuple[str, str]]:
    return [(f.file, f.column) for f in report.findings if f.kind == "leak"]


def test_a_clean_environment_with_a_strong_legit_feature_passes(tmp_path):
    env, _ = binary_env(tmp_path)
    report = run(env)
    assert report.ok, [f.line() for f in report.findings]
    assert report.attempts >= 10 and report.candidates >= 10
    # r_00 alone beats the bar here, but it is as good on the training rows: a feature, not a leak
    assert report.best[0]["where"] == "public/test.csv column 'r_00'" and report.best[0]["score"] > STRONG


def test_answers_in_an_extra_csv_under_another_name(tmp_path):
    env, answers = binary_env(tmp_path)
    pd.DataFrame({"customer": answers["part_id"], "ref_flag": answers["failed"]}).sample(frac=1, random_state=0) \
        .to_csv(env / "public" / "customer_reference.csv", index=False)
    report = run(env)
    assert leaks(report) == [("public/customer_reference.csv", "ref_flag")]
    leak = report.leaks[0]
    assert leak.score == 1.0 and "bronze 0.8" in leak.bar and "strong reference 0.78" in leak.bar
    assert report.reason().startswith("public/customer_reference.csv column 'ref_flag' (its values) scores 1 on the "
                                      "hidden answers (bronze 0.8, strong reference 0.78)")
    undeclared = [f for f in report.findings if f.kind == "undeclared"]
    assert [f.file for f in undeclared] == ["public/customer_reference.csv"]
    assert "declares description.md, train.csv, test.csv, sample_submission.csv" in undeclared[0].line()


def test_answers_in_a_json_map_keyed_by_the_test_ids_under_renamed_classes(tmp_path):
    env, answers = binary_env(tmp_path)
    crm = {"exported": "2026-11-30", "accounts": {i: {"status": "churned" if v else "active", "tier": k % 3}
                                                  for k, (i, v) in enumerate(zip(answers["part_id"], answers["failed"]))}}
    (env / "public" / "crm_export.json").write_text(json.dumps(crm))
    report = run(env)
    assert ("public/crm_export.json", "$.accounts.<id>.status") in leaks(report)
    assert report.leaks[0].how == "its values relabelled"


def test_answers_in_the_sample_submission(tmp_path):
    env, answers = binary_env(tmp_path)
    rng = np.random.default_rng(1)
    noisy = np.where(rng.random(len(answers)) < 0.9, answers["failed"], 1 - answers["failed"])
    answers.assign(failed=0.2 + 0.6 * noisy).to_csv(env / "public" / "sample_submission.csv", index=False)
    report = run(env)
    assert leaks(report) == [("public/sample_submission.csv", "failed")]
    assert 0.85 < report.leaks[0].score < 0.95


def test_answers_in_the_description(tmp_path):
    env, answers = binary_env(tmp_path)
    table = "\n".join(f"| `{i}` | {'fail' if v else 'pass'} |" for i, v in zip(answers["part_id"], answers["failed"]))
    (env / "public" / "description.md").write_text(f"# Parts\n\n## Audited results\n\n| part | result |\n|---|---|\n"
                                                   f"{table}\n")
    report = run(env)
    assert ("public/description.md", "the token after each test id") in leaks(report)


def test_answers_written_out_in_row_order_in_a_text_file(tmp_path):
    env, answers = binary_env(tmp_path)
    (env / "public" / "notes.txt").write_text("QA run 7 results: " + " ".join(map(str, answers["failed"])) + "\n")
    report = run(env)
    assert ("public/notes.txt", "a run of 240 values (by row order)") in leaks(report)


def test_a_test_column_that_is_a_monotone_transform_of_the_label(tmp_path):
    env, answers = binary_env(tmp_path)
    rng = np.random.default_rng(2)
    train = pd.read_csv(env / "public" / "train.csv")
    test = pd.read_csv(env / "public" / "test.csv")
    train.insert(7, "inspection_score", rng.normal(5, 1, len(train)).round(3))  # noise on the training rows
    test["inspection_score"] = (5 + 1.4 * answers["failed"] + rng.normal(0, 0.6, len(test))).round(3).to_numpy()
    train.to_csv(env / "public" / "train.csv", index=False)
    test.to_csv(env / "public" / "test.csv", index=False)
    report = run(env)
    assert leaks(report) == [("public/test.csv", "inspection_score")]
    assert report.leaks[0].score > 0.9


def test_a_test_only_column_written_as_a_decreasing_code_of_the_label(tmp_path):
    env, answers = binary_env(tmp_path)
    test = pd.read_csv(env / "public" / "test.csv")
    test["batch"] = np.where(answers["failed"] == 1, 10, 20)
    test.to_csv(env / "public" / "test.csv", index=False)
    assert ("public/test.csv", "batch") in leaks(run(env))


def test_row_order_and_id_patterns(tmp_path):
    env, answers = binary_env(tmp_path)
    order = np.argsort(answers["failed"].to_numpy(), kind="stable")
    for name in ("test.csv", "sample_submission.csv"):
        frame = pd.read_csv(env / "public" / name)
        frame.iloc[order].to_csv(env / "public" / name, index=False)
    answers.iloc[order].to_csv(env / "private" / "answers.csv", index=False)
    assert ("public/test.csv", "row position") in leaks(run(env))

    env2, answers2 = binary_env(tmp_path / "ids")
    marked = [f"{i}-{'F' if v else 'K'}" for i, v in zip(answers2["part_id"], answers2["failed"])]
    for name in ("test.csv", "sample_submission.csv"):
        frame = pd.read_csv(env2 / "public" / name)
        frame.assign(part_id=marked).to_csv(env2 / "public" / name, index=False)
    answers2.assign(part_id=marked).to_csv(env2 / "private" / "answers.csv", index=False)
    found = leaks(run(env2))
    assert ("public/test.csv", "part_id: its letters") in found and ("public/test.csv", "part_id: last character") in found


def test_parquet_jsonl_and_arrays_are_read_too(tmp_path):
    env, answers = binary_env(tmp_path)
    answers.rename(columns={"part_id": "pid", "failed": "q"}).to_parquet(env / "public" / "extra.parquet")
    report = run(env)
    assert ("public/extra.parquet", "q") in leaks(report)
    (env / "public" / "extra.parquet").unlink()
    with open(env / "public" / "log.jsonl", "w") as f:
        for i, v in zip(answers["part_id"], answers["failed"]):
            f.write(json.dumps({"part": i, "event": {"ok": int(not v)}}) + "\n")
    assert ("public/log.jsonl", "event.ok") in leaks(run(env))
    (env / "public" / "log.jsonl").unlink()
    np.save(env / "public" / "cache.npy", answers["failed"].to_numpy() * 2.0 - 1)
    assert ("public/cache.npy", "values (by row order)") in leaks(run(env))


def image_env(root: Path, sidecar: bool = False, folders: bool = False) -> Path:
    """A tiny image task: test rows point to PNG files (a sidecar JSON beside each, or a folder per class)."""
    env, answers = binary_env(root)
    test = pd.read_csv(env / "public" / "test.csv")
    paths = []
    for i, v in zip(answers["part_id"], answers["failed"]):
        rel = f"test/{'fail' if v else 'pass'}/{i}.png" if folders else f"test/{i}.png"
        (env / "public" / rel).parent.mkdir(parents=True, exist_ok=True)
        (env / "public" / rel).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
        if sidecar:
            (env / "public" / f"test/{i}.json").write_text(json.dumps({"camera": "c1", "qa": {"defect": int(v)}}))
        paths.append(rel)
    test["image"] = paths
    test.to_csv(env / "public" / "test.csv", index=False)
    return env


def test_media_sidecars_and_media_folders(tmp_path):
    report = run(image_env(tmp_path / "a", sidecar=True))
    assert ("public/test/<id>.json", "qa.defect") in leaks(report)
    undeclared = [f.file for f in report.findings if f.kind == "undeclared"]
    assert len(undeclared) == 240 and undeclared[0].startswith("public/test/") and undeclared[0].endswith(".json")
    report = run(image_env(tmp_path / "b", folders=True))
    assert ("public/test.csv", "image: folder") in leaks(report)
    assert not [f for f in report.findings if f.kind == "undeclared"]  # the media are declared by the rows


def test_several_prediction_columns_read_off_one_file_each(tmp_path):
    rng = np.random.default_rng(3)
    env = tmp_path / "multi"
    (env / "public").mkdir(parents=True)
    (env / "private").mkdir()
    labels = ["a", "b", "c"]
    n_train, n_test = 150, 200
    X = rng.normal(0, 1, (n_train + n_test, 4))
    Y = (X[:, :3] + rng.normal(0, 1.5, (n_train + n_test, 3)) > 0.8).astype(int)
    ids = [f"t{k:05d}" for k in range(n_train + n_test)]
    feats = pd.DataFrame(X.round(4), columns=[f"x{j}" for j in range(4)]).assign(id=ids)
    feats.iloc[:n_train].assign(**{c: Y[:n_train, j] for j, c in enumerate(labels)}).to_csv(env / "public" / "train.csv",
                                                                                           index=False)
    feats.iloc[n_train:].to_csv(env / "public" / "test.csv", index=False)
    answers = pd.DataFrame({"id": ids[n_train:], **{c: Y[n_train:, j] for j, c in enumerate(labels)}})
    answers.to_csv(env / "private" / "answers.csv", index=False)
    answers.assign(a=0.5, b=0.5, c=0.5).to_csv(env / "public" / "sample_submission.csv", index=False)
    (env / "public" / "description.md").write_text("# Three labels\n")
    spec = GradeSpec("mean_columnwise_roc_auc", False, "id", labels, labels, task_type="multilabel")
    assert run(env, spec, medal=0.9, strong=0.88).ok
    answers.rename(columns={"a": "alpha", "b": "beta", "c": "gamma"}).to_csv(env / "public" / "flags.csv", index=False)
    report = run(env, spec, medal=0.9, strong=0.88)
    combined = [f for f in report.leaks if f.file == "public/flags.csv"]
    assert combined and combined[0].column == "alpha, beta, gamma" and combined[0].score == 1.0
    assert combined[0].how == "one column per prediction column (3 of 3)"


def test_multiclass_log_loss_and_regression(tmp_path):
    from realdata import diabetes, wine
    from engine.seeds.competition import env_from_mlebench

    root = tmp_path / "comps"
    wine_dir = wine(root)
    env = env_from_mlebench(wine_dir, tmp_path / "cache")
    assert env.grade.metric == "log_loss"
    answers = pd.read_csv(env.answers)
    cultivar = np.asarray(env.grade.prediction_columns)[answers[env.grade.prediction_columns].to_numpy().argmax(1)]
    pd.DataFrame({"wine": answers["id"], "kind": cultivar}).to_csv(env.public / "cellar.csv", index=False)
    report = audit(env.dir, env.grade, medal=0.3)
    assert ("public/cellar.csv", "kind") in leaks(report) and report.leaks[0].how.startswith("its values as labels")

    diab = env_from_mlebench(diabetes(root), tmp_path / "cache")
    ans = pd.read_csv(diab.answers)
    target = diab.grade.prediction_columns[0]
    pd.DataFrame({"id": ans["id"], "z": 3 - 0.01 * ans[target]}).to_csv(diab.public / "scores.csv", index=False)
    report = audit(diab.dir, diab.grade, medal=45.0)
    assert ("public/scores.csv", "z") in leaks(report)
    assert report.leaks[0].how == "its ranks mapped onto the training targets, reversed"


def test_a_weak_hint_below_the_bar_is_not_a_finding(tmp_path):
    env, answers = binary_env(tmp_path)
    rng = np.random.default_rng(4)
    weak = np.where(rng.random(len(answers)) < 0.65, answers["failed"], 1 - answers["failed"])
    pd.DataFrame({"part_id": answers["part_id"], "hint": weak}).to_csv(env / "public" / "hints.csv", index=False)
    report = audit(env, AUC, medal=BRONZE, strong=STRONG, declared=[*declared_files(env, AUC), "hints.csv"])
    assert report.ok and report.best[0]["where"] in ("public/hints.csv column 'hint'", "public/test.csv column 'r_00'")


def test_without_a_bar_the_audit_asks_for_most_of_the_way_to_perfect(tmp_path):
    env, answers = binary_env(tmp_path)
    pd.DataFrame({"part_id": answers["part_id"], "f": answers["failed"]}).to_csv(env / "public" / "f.csv", index=False)
    report = run(env, medal=None, strong=None)
    assert leaks(report) == [("public/f.csv", "f")] and "80% of the way from the constant 0.5 to 1.0" in report.leaks[0].bar


def test_only_audits_the_files_it_is_given(tmp_path):
    env, answers = binary_env(tmp_path)
    pd.DataFrame({"part_id": answers["part_id"], "f": answers["failed"]}).to_csv(env / "public" / "f.csv", index=False)
    assert audit(env, AUC, medal=BRONZE, strong=STRONG, only={"public/description.md"}).ok
    assert not audit(env, AUC, medal=BRONZE, strong=STRONG, only={"public/f.csv"}).ok


def test_the_shipped_test_environment_passes(tmp_path):
    env = tmp_path / "tiny"
    shutil.copytree(DATA / "envs" / "tiny-tabular", env)
    report = audit(env, GradeSpec.load(env / "private" / "grade.json"))
    assert report.ok, report.reason()


def test_an_audit_that_cannot_run_fails_closed(tmp_path):
    env, answers = binary_env(tmp_path)
    answers.rename(columns={"failed": "other"}).to_csv(env / "private" / "answers.csv", index=False)
    report = run(env)
    assert not report.ok and report.findings[0].kind == "error"
    assert report.reason() == "the audit could not run (KeyError: 'failed'): not verified"


def test_files_over_the_size_cap_fail_closed_and_big_tables_are_read_in_chunks(tmp_path, monkeypatch):
    """A file too big to read is a finding ("not audited"), never a silent pass; a table that big is read in chunks,
    so answers in it are still found (here the cap is 2 KB and a chunk 50 rows, so every table is "big")."""
    from engine.grading.audit import sources

    monkeypatch.setattr(sources, "MAX_BYTES", 2048)
    monkeypatch.setattr(sources, "CHUNK_ROWS", 50)
    env, answers = binary_env(tmp_path)
    assert (env / "public" / "train.csv").stat().st_size > 2048
    assert run(env).ok, [f.line() for f in run(env).findings]  # clean: every table was read, in chunks
    declared = [*declared_files(env, AUC), "crm.json", "lookup.csv"]
    crm = {"accounts": {i: {"status": int(v)} for i, v in zip(answers["part_id"], answers["failed"])}}
    (env / "public" / "crm.json").write_text(json.dumps(crm))
    report = audit(env, AUC, medal=BRONZE, strong=STRONG, declared=declared)
    assert [(f.kind, f.file) for f in report.findings] == [("unaudited", "public/crm.json")]
    assert report.reason() == ("public/crm.json not audited (larger than 2 KB and not a table, which is read in "
                               "chunks): not verified")
    (env / "public" / "crm.json").unlink()
    pd.DataFrame({"customer": answers["part_id"], "ref_flag": answers["failed"]}).sample(frac=1, random_state=0) \
        .to_csv(env / "public" / "lookup.csv", index=False)
    assert (env / "public" / "lookup.csv").stat().st_size > 2048
    report = audit(env, AUC, medal=BRONZE, strong=STRONG, declared=declared)
    assert leaks(report) == [("public/lookup.csv", "ref_flag")] and report.leaks[0].score == 1.0
