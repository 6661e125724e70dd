"""Splits a researcher controls: `envs split SELECTOR --to train|heldout` with eval's selectors, shown by `envs list`;
bad selectors and folders are one clear line and change nothing."""

from __future__ import annotations

from conftest import DATA

from engine.errors import SandmleError
from engine.eval.select import set_split


def _env(store, env_id: str, seed_id: str, status: str = "verified") -> None:
    store.envs.add({"id": env_id, "seed_id": seed_id, "title": f"{seed_id} task", "status": status,
                    "split": "train", "modality": "tabular", "task_type": "binary", "metric": "roc_auc",
                    "lower_is_better": 0, "id_column": "id", "target_columns": ["y"],
                    "dir": str(DATA / "envs" / "tiny-tabular")})


def _splits(store) -> dict[str, str]:
    return {r["id"]: r["split"] for r in store.envs.list()}


def test_split_by_seed_id_and_split_selector(seeded_store, run_cli):
    store = seeded_store
    for env_id, seed in (("forest-a", "forest-cover"), ("forest-b", "forest-cover"), ("leaf-a", "leaf-species"),
                         ("leaf-b", "leaf-species")):
        _env(store, env_id, seed)
    res = run_cli("envs", "split", "seed:leaf-species", "--to", "heldout")
    assert res.code == 0, res.err
    assert res.out.strip() == "2 environments now in heldout: leaf-a, leaf-b"
    assert _splits(store) == {"forest-a": "train", "forest-b": "train", "leaf-a": "heldout", "leaf-b": "heldout"}
    assert run_cli("envs", "split", "forest-b,leaf-a", "--to", "heldout", "--json").json() == {
        "split": "heldout", "moved": ["forest-b", "leaf-a"]}
    assert run_cli("envs", "split", "split:heldout", "--to", "train").code == 0
    assert set(_splits(store).values()) == {"train"}
    listed = run_cli("envs", "list").out.splitlines()
    assert listed[0].split()[:3] == ["id", "status", "split"]
    assert all(line.split()[2] == "train" for line in listed[2:])
    assert {e["id"]: e["split"] for e in run_cli("envs", "list", "--json").json()}["leaf-a"] == "train"


def test_bad_selectors_change_nothing(seeded_store, run_cli):
    _env(seeded_store, "forest-a", "forest-cover")
    res = run_cli("envs", "split", "forest-a,nope", "--to", "heldout")
    assert res.code != 0 and res.err.startswith("error: no environment or folder 'nope'")
    assert len(res.err.strip().splitlines()) == 1
    res = run_cli("envs", "split", str(DATA / "envs" / "tiny-tabular"), "--to", "heldout")
    assert res.code != 0 and "a folder has no split" in res.err
    assert run_cli("envs", "split", "forest-a", "--to", "test").code == 2  # click: not a choice
    assert _splits(seeded_store) == {"forest-a": "train"}


def test_set_split_is_the_engine_function(seeded_store):
    _env(seeded_store, "forest-a", "forest-cover")
    assert set_split(seeded_store, "all", "heldout") == ["forest-a"]
    try:
        set_split(seeded_store, "all", "real")
    except SandmleError as exc:
        assert "unknown split 'real'" in str(exc)
    else:
        raise AssertionError("a split other than train/heldout was accepted")


def test_a_real_competition_stays_in_split_real(seeded_store, run_cli):
    _env(seeded_store, "forest-a", "forest-cover")
    _env(seeded_store, "comp-a", "forest-cover")
    seeded_store.envs.update("comp-a", split="real")
    res = run_cli("envs", "split", "forest-a,comp-a", "--to", "heldout")
    assert res.code != 0
    assert res.err.strip() == ("error: comp-a: real competition(s) stay in split real (training never uses them); "
                               "nothing moved")
    assert _splits(seeded_store) == {"forest-a": "train", "comp-a": "real"}
    try:
        set_split(seeded_store, "comp-a", "train")
    except SandmleError as exc:
        assert str(exc).startswith("comp-a: real competition(s)")
    else:
        raise AssertionError("a real competition was moved into train")
    assert set_split(seeded_store, "forest-a", "heldout") == ["forest-a"]
