"""Shipped seeds, the seed format's validation, and MLE-bench import."""

from __future__ import annotations

import pytest

from conftest import DATA, ROOT


def test_shipped_seeds_cover_mlebench_lite_kinds(seeded_store):
    seeds = seeded_store.seeds.list()
    assert len(seeds) >= 10
    kinds = {(s["modality"], s["task_type"], s["metric"]) for s in seeds}
    need = [
        ("tabular", "binary", "roc_auc"),
        ("tabular", "multiclass", "log_loss"),
        ("text", "multiclass", "log_loss"),
        ("text", "multilabel", "mean_columnwise_roc_auc"),
        ("timeseries", "multiclass", "f1_macro"),
    ]
    for k in need:
        assert k in kinds, k
    assert any(s["task_type"] == "multi_target_regression" for s in seeds)
    assert any(s["modality"] == "tabular" and s["metric"] in ("rmse", "rmsle") for s in seeds)
    assert any(s["metric"] == "qwk" and s["task_type"] == "ordinal" for s in seeds)
    assert any(s["modality"] == "image" for s in seeds)
    assert any(s["modality"] in ("audio", "sequence") for s in seeds)
    for s in seeds:
        assert len(s["description"].split()) > 80, s["id"]


def test_cli_seeds_list_json(run_cli):
    assert run_cli("seeds", "import", str(ROOT / "seeds")).code == 0
    res = run_cli("seeds", "list", "--json")
    assert res.code == 0
    data = res.json()
    assert len(data) >= 10
    assert {d["modality"] for d in data} >= {"tabular", "text", "image", "timeseries", "audio"}


def test_cli_show_enable_disable_tag(run_cli):
    run_cli("seeds", "import", str(ROOT / "seeds"))
    assert run_cli("seeds", "disable", "author-style").code == 0
    shown = run_cli("seeds", "show", "author-style", "--json").json()
    assert shown["enabled"] is False
    assert run_cli("seeds", "tag", "author-style", "favourite").code == 0
    assert "favourite" in run_cli("seeds", "show", "author-style", "--json").json()["tags"]
    assert run_cli("seeds", "enable", "author-style").code == 0
    assert run_cli("seeds", "show", "author-style", "--json").json()["enabled"] is True
    text = run_cli("seeds", "show", "author-style").out
    assert "log_loss (minimize)" in text and "schema:" in text
    missing = run_cli("seeds", "show", "nope")
    assert missing.code != 0 and missing.err.strip().startswith("error: no seed with id 'nope'")


BAD_CASES = [
    ("bad toml", lambda t: t + "\nthis is = = not toml\n", "invalid TOML"),
    ("unknown key", lambda t: t.replace('title =', 'colour = "red"\ntitle =', 1), "unknown key 'colour'"),
    ("missing field", lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("metric")), "missing required key 'metric'"),
    ("unknown metric", lambda t: "\n".join('metric = "banana"' if l.startswith("metric") else l for l in t.splitlines()), "'metric' = 'banana' is not a known metric"),
    ("wrong type", lambda t: "\n".join('target_columns = "author"' if l.startswith("target_columns") else l for l in t.splitlines()), "key 'target_columns' must be a list"),
    ("bad direction", lambda t: "\n".join('direction = "maximize"' if l.startswith("direction") else l for l in t.splitlines()), "disagrees with metric"),
]


@pytest.mark.parametrize("name,mutate,message", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_malformed_seed_one_line_error_store_unchanged(run_cli, seed_copy, name, mutate, message):
    assert run_cli("seeds", "import", str(ROOT / "seeds")).code == 0
    before = run_cli("seeds", "list", "--json").json()
    folder = seed_copy("author-style")
    toml = folder / "seed.toml"
    toml.write_text(mutate(toml.read_text()))
    res = run_cli("seeds", "import", str(folder))
    assert res.code != 0
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, res.err  # one line, no traceback
    assert lines[0].startswith("error: ") and str(toml) in lines[0] and message in lines[0], lines[0]
    assert run_cli("seeds", "list", "--json").json() == before


def test_one_bad_seed_in_a_folder_stores_none(run_cli, seed_copy):
    good = seed_copy("author-style")
    (good / "seed.toml").write_text((good / "seed.toml").read_text().replace('id = "author-style"', 'id = "my-seed"'))
    bad = seed_copy("taxi-fare")
    (bad / "seed.toml").write_text((bad / "seed.toml").read_text().replace('metric = "rmse"', 'metric = "nope"'))
    before = run_cli("seeds", "list", "--json").json()  # a fresh data dir: the shipped seeds
    res = run_cli("seeds", "import", str(good.parent))
    assert res.code != 0 and "taxi-fare" in res.err
    assert run_cli("seeds", "list", "--json").json() == before and "my-seed" not in {s["id"] for s in before}


def test_debug_shows_traceback(run_cli, home, seed_copy):
    from engine.errors import SeedError

    folder = seed_copy("author-style")
    (folder / "seed.toml").write_text("not = = toml")
    with pytest.raises(SeedError):
        from workbench.cli import main
        main(["--debug", "seeds", "import", str(folder)])


def test_missing_path_is_an_error(run_cli, tmp_path):
    res = run_cli("seeds", "import", str(tmp_path / "nowhere"))
    assert res.code != 0 and "no such file or folder" in res.err


def test_import_mlebench_folder(run_cli):
    res = run_cli("seeds", "import", str(DATA / "mlebench" / "spooky-mini"), "--json")
    assert res.code == 0, res.err
    seed = run_cli("seeds", "show", "spooky-mini", "--json").json()
    assert seed["metric"] == "log_loss" and seed["lower_is_better"] == 1
    assert seed["source_format"] == "mlebench" and seed["origin"] == "mlebench:spooky-mini"
    assert seed["id_column"] == "id" and seed["target_columns"] == ["author"]
    assert seed["modality"] == "text" and seed["task_type"] == "multiclass"
    assert seed["hints"]["n_classes"] == 3
    assert seed["leaderboard"] == [0.2, 0.3, 0.41, 0.55, 1.09]
    assert seed["train_size"] == 60 and seed["test_size"] == 30


def test_mlebench_unknown_grader_needs_metric(run_cli, tmp_path):
    import shutil

    dest = tmp_path / "odd"
    shutil.copytree(DATA / "mlebench" / "spooky-mini", dest)
    cfg = dest / "config.yaml"
    cfg.write_text(cfg.read_text().replace("multi-class-log-loss", "weird-metric"))
    res = run_cli("seeds", "import", str(dest))
    assert res.code != 0 and "grader.name" in res.err and "--metric" in res.err
    ok = run_cli("seeds", "import", str(dest), "--metric", "log_loss")
    assert ok.code == 0, ok.err
