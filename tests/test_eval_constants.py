"""`sandmle eval constants`: every option a policy can pick as a constant policy on two synthesized environments
(procedural), the best of them and the per-task oracle, cached in the data dir so a second call runs nothing; bad
input is one line and loses nothing."""

from __future__ import annotations

import pytest

from conftest import cli_runner, store_at

SEEDS = ("tabular-binary-manufacturing", "taxi-fare")


@pytest.fixture(scope="module")
def constants_home(tmp_path_factory):
    """A data dir with one verified procedural environment of each seed in SEEDS."""
    from engine.seeds.load import load_shipped
    from engine.synthesis.pipeline import synthesize
    from store import Store

    home = tmp_path_factory.mktemp("constants-home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SANDMLE_HOME", str(home))
        env.delenv("SANDMLE_CONFIG", raising=False)
        with Store(home / "sandmle.db") as s:
            load_shipped(s)
            for seed in SEEDS:
                report = synthesize(s, seed, 1, backend="procedural", rng_seed=3)
                assert len(report.verified) == 1, report.to_dict()
    return home


@pytest.fixture
def cstore(constants_home, monkeypatch):
    monkeypatch.delenv("SANDMLE_CONFIG", raising=False)
    with store_at(constants_home, monkeypatch) as s:
        yield s


def test_every_option_as_a_constant_the_best_and_the_oracle_then_cached(cstore, capsys):
    from engine.eval.constants import cache_dir, options

    cli = cli_runner(capsys)
    ids = sorted(r["id"] for r in cstore.envs.list(status="verified"))
    assert len(ids) == 2
    before = cstore.sandbox.count()
    res = cli("eval", "constants", "--envs", ",".join(ids), "--json")
    assert res.code == 0, res.err
    out = res.json()
    # one sandbox run per environment (all 32 options in it), recorded in the store under the environment
    assert cstore.sandbox.count() == before + 2
    assert all(cstore.sandbox.count(env_id=i) >= 1 for i in ids)
    # a progress line per environment on stderr
    assert [line.split(":")[0] for line in res.err.splitlines() if line.startswith("constants [")] == [
        f"constants [{k}/2] {i}" for k, i in enumerate(ids, 1)]
    per_env = {e["env_id"]: e for e in out["envs"]}
    assert sorted(per_env) == ids
    keys = [c.key for c in options()]
    for e in per_env.values():
        assert sorted(e["options"]) == sorted(keys)
        assert e["medal_options"] == [k for k in keys if e["options"][k]["medal"]]
        assert all(v["valid"] == (v["score"] is not None) for v in e["options"].values())
    # the best constant's medal rate is the mean over environments of its medal there; no option does better
    best = out["best_constant_strategy"]
    rate = sum(per_env[i]["options"][best]["medal"] for i in ids) / 2
    assert out["best_constant_medal"] == pytest.approx(rate)
    assert all(sum(per_env[i]["options"][k]["medal"] for i in ids) / 2 <= rate for k in keys)
    assert out["oracle_medal"] == pytest.approx(sum(bool(per_env[i]["medal_options"]) for i in ids) / 2)
    assert rate <= out["oracle_medal"] <= 1
    assert out["best_constant_per_task"] == {i: per_env[i]["options"][best]["medal"] for i in ids}
    cached = sorted(p.stem for p in cache_dir(cstore.data_dir).glob("*.json"))
    assert cached == ids
    # a second call reads the cache: no sandbox run, the same figures; the table says them
    res = cli("eval", "constants", "--envs", ",".join(ids))
    assert res.code == 0, res.err
    assert cstore.sandbox.count() == before + 2
    assert f"best constant strategy: {best} · medal {rate:.3f}" in res.out
    assert f"per-task oracle: medal {out['oracle_medal']:.3f}" in res.out
    for i in ids:
        assert f"{i}: {len(per_env[i]['medal_options'])} of 32 options earn a medal" in res.out
    assert max(len(line) for line in res.out.splitlines()) <= 80
    # an eval run's environments: the same, from the cache
    run = cstore.runs.create("eval", {"policy": "scripted", "scaffold": "oneshot", "envs": ids})
    res = cli("eval", "constants", "--run", run, "--json")
    assert res.code == 0, res.err
    assert res.json()["best_constant_medal"] == out["best_constant_medal"] and cstore.sandbox.count() == before + 2


def test_bad_input_is_one_line_and_loses_nothing(cstore, capsys):
    from engine.eval.constants import cache_dir

    cli = cli_runner(capsys)
    ids = sorted(r["id"] for r in cstore.envs.list(status="verified"))
    assert cli("eval", "constants", "--envs", ids[0]).code == 0
    runs, cached = cstore.sandbox.count(), sorted(cache_dir(cstore.data_dir).glob("*.json"))
    synth = cstore.runs.list(kind="synthesis")[0]["id"]
    for args, says in ((["--run", "eval-nope"], "error: no run with id 'eval-nope'"),
                       (["--run", synth], f"error: run {synth} is a synthesis run, not an eval run"),
                       (["--envs", " , "], "error: empty selector"),
                       (["--envs", "no-such-env"], "error: no environment or folder 'no-such-env'")):
        res = cli("eval", "constants", *args)
        assert res.code == 1 and res.err.startswith(says) and len(res.err.strip().splitlines()) == 1, (args, res.err)
    res = cli("eval", "constants")
    assert res.code == 2 and "give one of --envs SELECTOR or --run EVAL_RUN_ID" in res.err
    assert cstore.sandbox.count() == runs and sorted(cache_dir(cstore.data_dir).glob("*.json")) == cached
    assert len(cstore.envs.list(status="verified")) == 2
