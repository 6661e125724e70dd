"""Each extension point is one registry: a scaffold, a metric and an executor are each added in one place — their
module (in a temporary package here) plus one registry entry (monkeypatched in) — and the CLI, the config and the
eval accept them with nothing else touched (docs/ARCHITECTURE.md, "Where to add …")."""

from __future__ import annotations

import json
import re
import shutil
import textwrap

import pytest

from engine.agents.scaffolds import SCAFFOLDS, Scaffold
from engine.backends import EXECUTORS, Backend
from engine.config import load_settings
from engine.envs.layout import EnvSpec
from engine.errors import ConfigError
from engine.eval.run import run_eval
from engine.executors import get_executor
from engine.grading.metrics import METRICS, Metric
from engine.rl.config import GRPOConfig, load_config

from conftest import DATA, ROOT

TINY = DATA / "envs" / "tiny-tabular"

#: the new backends' modules, as a user would write them (each imports only the interface it implements)
MODULES = {
    "threads.py": '''
        """An executor: threads of this process, as `local`, under a name of its own."""
        from engine.executors.local import LocalExecutor


        class ThreadsExecutor(LocalExecutor):
            name = "threads"
        ''',
    "twice.py": '''
        """A scaffold: one whole script, and a second one when the first left no submission.csv."""
        from engine.agents.format import ToolCall, extract_code
        from engine.agents.scaffolds.base import Transcript, seed_for

        SYSTEM = "Write one complete Python script in a ```python block; it must write submission.csv."


        def run(env, policy, *, max_turns=2, rng_seed=None, transcript=None):
            env.max_steps = max_turns + 1
            task, _ = env.reset(seed=rng_seed)
            tr = transcript if transcript is not None else Transcript()
            tr.add("system", SYSTEM)
            tr.add("user", task)
            for turn in range(max_turns):
                action, _ = tr.act(policy, tr.turns, seed_for(rng_seed, turn))
                code = extract_code(action.text)
                tr.turns[-1].well_formed = code is not None
                result = env.step(ToolCall("python", {"code": code}) if code else None, error="no script")
                tr.add("tool", result.observation, tool="python", code=code, observation=result.observation)
                if env.read("submission.csv") is not None:
                    break
            env.step(ToolCall("answer", {"text": "done"}))
            return tr
        ''',
    "balanced.py": '''
        """A metric: accuracy averaged over the classes (scikit-learn's)."""
        import numpy as np
        from sklearn.metrics import balanced_accuracy_score


        def balanced_accuracy(y, p):
            return float(balanced_accuracy_score(np.asarray(y)[:, 0], np.asarray(p)[:, 0]))
        ''',
}


@pytest.fixture
def added(tmp_path, monkeypatch):
    """The package ``extpkg`` with the three modules, and one entry for each in its registry."""
    package = tmp_path / "pkgs" / "extpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, source in MODULES.items():
        (package / name).write_text(textwrap.dedent(source).lstrip())
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    from extpkg import balanced, twice

    monkeypatch.setitem(EXECUTORS.entries, "threads",
                        Backend("threads", "extpkg.threads:ThreadsExecutor", "threads under another name"))
    monkeypatch.setitem(SCAFFOLDS, "twice", Scaffold("twice", twice.run, 2, "scripts", "script"))
    monkeypatch.setitem(METRICS, "balanced_accuracy",
                        Metric("balanced_accuracy", balanced.balanced_accuracy, False, "label",
                               "accuracy averaged over the classes", 1.0, bounded=True))


def test_an_executor_is_its_module_and_one_entry(added, home, run_cli, store):
    (home / "config.toml").write_text('[executor]\nkind = "threads"\n')
    assert load_settings().executor.kind == "threads"  # the settings accept it
    (home / "config.toml").write_text('[executor]\nkind = "slurm"\n')
    with pytest.raises(ConfigError, match="unknown executor 'slurm'; expected local, process, ray, threads"):
        load_settings()
    (home / "config.toml").unlink()
    res = run_cli("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(TINY), "--executor",
                  "threads", "--workers", "1", "--json")  # the CLI's choice, and the eval runs on it
    assert res.code == 0, res.err
    report = res.json()
    assert report["n_episodes"] == 1 and report["summary"]["valid"]["mean"] == 1.0
    assert store.runs.get(report["run_id"])["config"]["executor"] == "threads"
    with get_executor("threads", store=store, workers=1) as ex:  # built from its entry
        assert type(ex).__name__ == "ThreadsExecutor" and ex.in_process
    res = run_cli("eval", "--envs", str(TINY), "--executor", "slurm")
    assert res.code == 2 and "'slurm' is not one of 'local', 'process', 'ray', 'threads'" in res.err


def test_a_scaffold_is_its_module_and_one_entry(added, run_cli, store):
    res = run_cli("rollout", "--env", str(TINY), "--scaffold", "twice", "--json")  # the CLI; scripted plays it
    assert res.code == 0, res.err
    traj = res.json()
    assert traj["scaffold"] == "twice" and traj["grade"]["valid_submission"]
    assert [t["role"] for t in traj["turns"]][:4] == ["system", "user", "assistant", "tool"]
    assert "```python" in traj["turns"][2]["text"]  # the script reply its entry names, not a guess from the prompt
    assert GRPOConfig(scaffold="twice").scaffold == "twice"  # the training config
    assert load_config(GRPOConfig, None, {"scaffold": "twice"}).scaffold == "twice"
    with pytest.raises(ValueError, match="scaffold must be one of react, aide, oneshot, twice"):
        GRPOConfig(scaffold="chat")
    report = run_eval(store, "scripted", [EnvSpec.from_dir(TINY)], scaffold="twice", workers=1)  # the eval
    assert report.summary["valid"]["mean"] == 1.0
    assert store.runs.get(report.run_id)["config"]["max_turns"] == 2  # its default budget
    assert "--scaffold [react|aide|oneshot|twice]" in run_cli("eval", "--help").out  # its choices, read live


def test_a_metric_is_its_module_and_one_entry(added, run_cli, store, tmp_path, seed_copy):
    env = tmp_path / "balanced-env"
    shutil.copytree(TINY, env)
    grade = json.loads((env / "private" / "grade.json").read_text())
    (env / "private" / "grade.json").write_text(json.dumps({**grade, "metric": "balanced_accuracy"}))
    answers = env / "private" / "answers.csv"
    res = run_cli("grade", str(env), str(answers), "--json")  # the CLI grades with it
    assert res.code == 0, res.err
    assert res.json()["score"] == 1.0 and res.json()["is_lower_better"] is False
    seed = seed_copy("tabular-binary-manufacturing")  # a seed may name it (the seed's config)
    toml = seed / "seed.toml"
    toml.write_text(toml.read_text().replace('metric = "roc_auc"', 'metric = "balanced_accuracy"'))
    res = run_cli("seeds", "import", str(seed), "--json")
    assert res.code == 0, res.err
    assert res.json()[0]["metric"] == "balanced_accuracy"
    report = run_eval(store, "scripted", [EnvSpec.from_dir(env)], scaffold="oneshot", workers=1)  # the eval
    trajectory = store.trajectories.get(store.runs.eval_results(report.run_id)[0]["trajectory_id"])
    assert trajectory.grade["valid_submission"] and 0.0 <= trajectory.grade["score"] <= 1.0
    spec = EnvSpec.from_dir(env)
    assert spec.grade.metric == "balanced_accuracy"


def test_the_where_to_add_section_names_the_registries_and_real_files():
    """docs/ARCHITECTURE.md says where each one goes: the registries used above, and files that exist."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    where = " ".join(text[text.index("## Where to add"):].split())
    paths = {p for p in re.findall(r"`([\w./]+(?:\.py|\.tcss|/))`", where) if "NAME" not in p}
    assert len(paths) > 15 and [p for p in sorted(paths) if not (ROOT / p).exists()] == []
    for name in ("`SCAFFOLDS` (`engine/agents/scaffolds/__init__.py`", "`METRICS` (`engine/grading/metrics.py`",
                 "`EXECUTORS` (`engine/backends.py`", "`SANDBOX_BACKENDS` (`engine/backends.py`",
                 "`RATES` (`engine/eval/report.py`"):
        assert name in where, name
