"""Fidelity of micro environments to their seed: the bands, the measurement of an environment's files, the
verifier's rejection, and `sandmle envs show`'s fidelity line — on seeds imported from scikit-learn's data."""

from __future__ import annotations

from dataclasses import replace

import pytest

import realdata
from engine.synthesis.fidelity import Profile, check, class_band, count_band, expected_profile, fidelity_line


def test_bands():
    assert class_band(2) == (2, 2) and class_band(10) == (10, 10) and class_band(20) == (20, 20)
    assert class_band(99) == (21, 99)  # leaf-classification: still many classes, never more than the seed
    assert count_band(64) == (58, 70) and count_band(8) == (6, 10) and count_band(0) == (0, 2)
    assert count_band(192) == (173, 211)


def _digits_seed(run_cli, tmp_path, **kw) -> dict:
    folder = realdata.digits(tmp_path, **kw)
    assert run_cli("seeds", "import", str(folder)).code == 0
    return run_cli("seeds", "show", folder.name, "--json").json()


def test_the_seed_profile_of_digits(run_cli, tmp_path):
    exp = expected_profile(_digits_seed(run_cli, tmp_path))
    assert exp == Profile(modality="tabular", task_type="multiclass", metric="accuracy", n_classes=10, n_targets=1,
                          numeric=64, categorical=0, text=0, id_in_test=True, submission_columns=1)
    kaggle = expected_profile(_digits_seed(run_cli, tmp_path, comp_id="digit-recognizer", kaggle=True))
    assert kaggle.id_in_test is False and kaggle.n_classes == 10


def test_check_names_what_breaks():
    seed = Profile("tabular", "multiclass", "accuracy", 10, 1, 64, 0, 0, True, 1)
    assert check(seed, replace(seed, numeric=66)) == []
    broken = replace(seed, n_classes=3, numeric=40, categorical=3)
    assert check(seed, broken) == ["3 classes (seed 10: needs 10)", "40 numeric features (seed 64: needs 58-70)",
                                   "3 categorical features (seed 0: needs 0-2)"]
    assert fidelity_line(seed, broken).startswith("fidelity BROKEN: 3 classes (seed 10: needs 10); 40 numeric")
    assert check(seed, replace(seed, id_in_test=False)) == ["the id must be in test.csv, as in the seed"]
    proba = Profile("tabular", "multiclass", "log_loss", 3, 1, 13, 0, 0, True, 3)
    assert check(proba, replace(proba, submission_columns=1)) == ["1 submission columns after the id (needs 3)"]
    assert check(replace(seed, modality="audio"), replace(seed, modality="signal")) == []
    assert check(replace(seed, modality="image"), replace(seed, modality="signal")) == ["modality signal (seed image)"]


@pytest.mark.slow
def test_synthesis_keeps_ten_classes_and_64_pixel_columns(run_cli, store, tmp_path):
    from engine.envs.layout import EnvSpec
    from engine.synthesis.fidelity import measure

    seed = _digits_seed(run_cli, tmp_path)
    res = run_cli("synth", "--seed", "digits", "--count", "1", "--backend", "procedural", "--json")
    assert res.code == 0, res.err
    env = res.json()["environments"][0]
    assert env["status"] == "verified", env["reason"]
    spec = EnvSpec.from_store(store, env["env_id"])
    got = measure(spec.dir, spec.grade)
    assert got.n_classes == 10 and 62 <= got.numeric <= 66 and got.categorical == 0 and got.text == 0
    assert check(expected_profile(seed), got) == []
    shown = run_cli("envs", "show", env["env_id"]).out
    assert f"fidelity ok: tabular multiclass accuracy · classes 10 (seed 10) · features {got.numeric} numeric " \
           "(seed 64 numeric)" in shown


@pytest.mark.slow
def test_synthesis_keeps_the_id_only_in_the_sample_submission(run_cli, store, tmp_path):
    import pandas as pd

    _digits_seed(run_cli, tmp_path, comp_id="digit-recognizer", kaggle=True)
    res = run_cli("synth", "--seed", "digit-recognizer", "--count", "1", "--backend", "procedural", "--json")
    env = res.json()["environments"][0]
    assert env["status"] == "verified", env["reason"]
    public = store.envs.get(env["env_id"])["dir"] + "/public"
    test, sample = pd.read_csv(f"{public}/test.csv"), pd.read_csv(f"{public}/sample_submission.csv")
    idc = sample.columns[0]
    assert idc not in test.columns and idc not in pd.read_csv(f"{public}/train.csv").columns
    assert sample[idc].tolist() == list(range(1, len(test) + 1))
    assert "fidelity ok" in run_cli("envs", "show", env["env_id"]).out


def test_the_verifier_rejects_an_unfaithful_environment(store, tmp_path):
    from conftest import DATA
    from engine.envs.layout import EnvSpec
    from engine.sandbox import get_backend
    from engine.synthesis.fidelity import measure
    from engine.synthesis.verifier import verify

    env = EnvSpec.from_dir(DATA / "envs" / "tiny-tabular")
    faithful = measure(env.dir, env.grade)
    seed = replace(faithful, n_classes=faithful.n_classes + 7)
    backend = get_backend("local", store=store)
    try:
        verdict = verify(backend, env.dir, env.grade, expected=seed)
    finally:
        backend.close()
    assert not verdict.ok and verdict.send_to == ""
    assert verdict.reason == f"fidelity: {faithful.n_classes} classes (seed {seed.n_classes}: needs {seed.n_classes})"
    assert verdict.report["fidelity"]["env"]["n_classes"] == faithful.n_classes
