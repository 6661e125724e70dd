"""Every path that runs agent or generator code takes its sandbox from the settings (`[sandbox]`) or the command's
options, records the backend and limits in each sandbox run, and fails with one line, before any episode, when
the configured backend cannot start."""

from __future__ import annotations

import pytest

from engine.config import load_settings

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"


def _configure(home, **values: object) -> None:
    lines = ["[sandbox]"] + [f"{k} = {v!r}".replace("'", '"') for k, v in values.items()]
    (home / "config.toml").write_text("\n".join(lines) + "\n")


def _runs_of(store, **where: str) -> list[dict]:
    rows = store.sandbox.list(limit=1000)
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def test_eval_runs_under_the_configured_limits(run_cli, home, store):
    _configure(home, backend="local", memory_mb=1500, max_procs=9, timeout_s=120.0)
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY), "--json")
    assert res.code == 0, res.err
    rows = _runs_of(store, run_id=res.json()["run_id"])
    assert rows and {r["backend"] for r in rows} == {"local"}
    assert {(r["limits"]["memory_mb"], r["limits"]["max_procs"], r["limits"]["timeout_s"]) for r in rows} == \
        {(1500, 9, 120.0)}


def test_command_options_override_the_settings(run_cli, home, store):
    _configure(home, backend="docker", memory_mb=1500, max_procs=9)  # docker would fail here without a daemon
    res = run_cli("rollout", "--env", str(TINY), "--scaffold", "oneshot", "--sandbox-backend", "local",
                  "--memory-mb", "1100", "--max-procs", "12", "--timeout", "50", "--json")
    assert res.code == 0, res.err
    rows = _runs_of(store, trajectory_id=res.json()["id"])
    assert rows and {r["backend"] for r in rows} == {"local"}
    assert {(r["limits"]["memory_mb"], r["limits"]["max_procs"], r["limits"]["timeout_s"]) for r in rows} == \
        {(1100, 12, 50.0)}


@pytest.mark.parametrize("args", [
    ("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY)),
    ("rollout", "--env", str(TINY), "--scaffold", "oneshot"),
    ("synth", "--seed", "forest-cover", "--count", "1"),
    ("sandbox", "run", "--", "true"),
])
def test_a_configured_backend_that_cannot_start_is_one_line(run_cli, home, seeded_store, monkeypatch, tmp_path,
                                                            args):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    _configure(home, backend="docker")
    res = run_cli(*args)
    assert res.code == 1, (res.out, res.err)
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    assert lines == [lines[0]] and lines[0].startswith("error: no Docker daemon answers"), res.err
    assert seeded_store.trajectories.list() == [] and _runs_of(seeded_store) == []


def test_eval_episode_under_docker_with_the_configured_limits(run_cli, home, store, docker_daemon):
    _configure(home, backend="docker", memory_mb=1500, max_procs=9)
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY), "--json")
    assert res.code == 0, res.err
    report = res.json()
    assert report["summary"]["valid"]["mean"] == 1.0
    rows = _runs_of(store, run_id=report["run_id"])
    assert rows and all(r["status"] == "ok" for r in rows)
    assert {r["backend"] for r in rows} == {"docker"} and {r["isolation"]["mode"] for r in rows} == {"docker"}
    assert {(r["limits"]["memory_mb"], r["limits"]["max_procs"]) for r in rows} == {(1500, 9)}


def test_runs_resume_of_an_eval_runs_under_the_sandbox_it_was_started_with(run_cli, home, store):
    """An eval stopped after its first episode and resumed after [sandbox] changed: the episodes it had left run
    under the settings kept in its config ("sandbox"), not the new ones."""
    from engine.config import SandboxSettings
    from engine.envs.layout import EnvSpec
    from engine.eval.run import run_eval

    def stop(done: int, total: int) -> None:
        raise KeyboardInterrupt

    started = SandboxSettings(backend="local", memory_mb=1500, max_procs=9, timeout_s=120.0)
    with pytest.raises(KeyboardInterrupt):
        run_eval(store, "scripted", [EnvSpec.from_dir(TINY)], scaffold="oneshot", rng_seeds=[0, 1, 2], workers=1,
                 sandbox=started, progress=stop)
    [run] = store.runs.list(kind="eval")
    assert run["status"] == "stopped" and len(store.runs.eval_results(run["id"])) == 1
    assert run["config"]["sandbox"]["memory_mb"] == 1500
    before = {r["id"] for r in _runs_of(store, run_id=run["id"])}

    _configure(home, backend="local", memory_mb=1100, max_procs=12, timeout_s=50.0)
    res = run_cli("runs", "resume", run["id"], "--json")
    assert res.code == 0, res.err
    assert res.json()["n_episodes"] == 3 and res.json()["errors"] == 0
    resumed = [r for r in _runs_of(store, run_id=run["id"]) if r["id"] not in before]
    assert resumed and {r["backend"] for r in resumed} == {"local"}
    assert {(r["limits"]["memory_mb"], r["limits"]["max_procs"], r["limits"]["timeout_s"]) for r in resumed} == \
        {(1500, 9, 120.0)}


def _backend_of(worker, _item):
    """An executor work function: the name and default limits of the worker's sandbox backend."""
    limits = worker.sandbox.default_limits
    return worker.sandbox.name, limits.memory_mb, limits.max_procs, limits.timeout_s


def test_grpo_rollouts_take_the_settings_and_the_config_overrides(home, store, monkeypatch, tmp_path):
    """The rollout workers' backends: [sandbox] with the command's options (backend / memory_mb / max_procs), stored
    with the run; a backend that cannot start fails before the run is stored."""
    from engine.errors import SandboxError
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import GRPOTrainer
    from rl_tiny import register_tiny_env

    env_id = register_tiny_env(store)
    _configure(home, backend="local", memory_mb=2000, max_procs=20, timeout_s=90.0)
    settings = load_settings().sandbox
    trainer = GRPOTrainer(store, GRPOConfig(env_ids=[env_id], rollout_workers=2),
                          sandbox=settings.override(memory_mb=1300, max_procs=11))
    try:
        assert trainer.executor is not None
        assert set(trainer.executor.map(_backend_of, [None, None])) == {("local", 1300, 11, 90.0)}
        stored = store.runs.get(trainer.run_id)["config"]["sandbox"]
        assert (stored["backend"], stored["memory_mb"], stored["max_procs"], stored["timeout_s"]) == \
            ("local", 1300, 11, 90.0)
    finally:
        trainer.close()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    before = len(store.runs.list(kind="grpo"))
    with pytest.raises(SandboxError, match="no Docker daemon answers"):
        GRPOTrainer(store, GRPOConfig(env_ids=[env_id]), sandbox=settings.override(backend="docker"))
    assert len(store.runs.list(kind="grpo")) == before
