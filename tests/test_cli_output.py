"""What a user reads: tables fit 80 columns (… marks a cut, --wide shows all), rejected environments say why,
nothing prints `None`, and long commands print progress lines when stderr is not a terminal."""

from __future__ import annotations

from conftest import DATA

LONG_REASON = "verifier: the strong reference does not beat the constant by more than three times the seed noise"


def _env(store, env_id: str, status: str, **extra) -> None:
    store.envs.add({"id": env_id, "title": extra.pop("title", "A title " * 12), "status": status,
                    "modality": "tabular", "task_type": "binary", "metric": "roc_auc", "lower_is_better": 0,
                    "id_column": "id", "target_columns": ["y"], **extra})


def _widths(text: str) -> list[int]:
    return [len(line) for line in text.splitlines()]


def test_tables_fit_80_columns_and_wide_shows_everything(seeded_store, run_cli):
    _env(seeded_store, "tabular-binary-manufactu-0badc0de", "rejected", reason=LONG_REASON, n_train=60, n_test=20)
    _env(seeded_store, "tabular-binary-manufactu-0000beef", "verified", n_train=80, n_test=120)
    for args in (("envs", "list"), ("seeds", "list"), ("runs", "list"), ("sandbox", "runs", "list"),
                 ("trajectories", "list")):
        res = run_cli(*args)
        assert res.code == 0, (args, res.err)
        assert max(_widths(res.out), default=0) <= 80, (args, res.out)
    schema = run_cli("seeds", "show", "forest-cover").out.split("schema:\n")[1].split("\n\n")[0]
    assert max(_widths(schema)) <= 80 and "…" in schema
    narrow = run_cli("envs", "list").out
    assert "tabular-binary-manufactu-0badc0de" in narrow  # ids are never cut
    rejected = next(line for line in narrow.splitlines() if "0badc0de" in line)
    assert "rejected" in rejected and "verifier:" in rejected and rejected.endswith("…")
    wide = run_cli("envs", "list", "--wide").out
    assert LONG_REASON in wide and max(_widths(wide)) > 80
    verified = next(line for line in wide.splitlines() if "0000beef" in line)
    assert "80/120" in verified and ("A title " * 12).strip() in verified


def test_env_show_never_prints_none(store, run_cli):
    _env(store, "bare-env", "rejected", title="Bare", reason="designer: no acceptable output",
         thresholds={"gold": 0.9, "silver": 0.8, "bronze": 0.7, "median": None})
    res = run_cli("envs", "show", "bare-env")
    assert res.code == 0, res.err
    assert "None" not in res.out
    assert "train - / test - rows · backend - · rng seed - · -" in res.out
    assert "seed - ·" in res.out and "median -" in res.out and "reason: designer: no acceptable output" in res.out


def test_progress_lines_when_stderr_is_not_a_terminal(run_cli):
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(DATA / "envs" / "tiny-tabular"),
                  "--rng-seeds", "2", "--workers", "1")
    assert res.code == 0, res.err
    lines = [line for line in res.err.splitlines() if line.startswith("eval oneshot:")]
    assert lines[0].startswith("eval oneshot: 0/2 (0%)")
    assert lines[-1].startswith("eval oneshot: 2/2 (100%)")
    assert "\r" not in res.err


def test_a_fresh_data_dir_starts_with_the_shipped_seeds(run_cli, tmp_path):
    from conftest import ROOT
    from engine.upkeep import open_store

    shipped = {p.name for p in (ROOT / "seeds").iterdir() if p.is_dir()}
    res = run_cli("seeds", "list", "--json")  # the first command on an empty data dir
    assert res.code == 0 and {s["id"] for s in res.json()} == shipped
    with open_store(tmp_path / "engine-user" / "sandmle.db") as store:  # `import engine` users get them too
        assert store.created and {s["id"] for s in store.seeds.list()} == shipped
    with open_store(tmp_path / "engine-user" / "sandmle.db") as store:  # once: an existing store is left alone
        assert not store.created and store.seeds.count() == len(shipped)
