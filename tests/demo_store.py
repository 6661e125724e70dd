"""A fixture store for the UI tests and the snapshot tests: stable, invented rows written through the store API —
environments with files on disk, sandbox runs with logs, a GRPO run with metrics, checkpoints and rollouts, and eval
runs. None of it happened: the reward curve is a formula and the checkpoint hash is zeros, so it stays under tests/
and never feeds a picture a reader takes for a run (the README's screenshots are of a real quick-start store:
scripts/screenshots.py)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from engine.seeds.load import load_shipped
from store import Store
from store.trajectories import Trajectory, Turn

T0 = "2026-11-30T05:{:02d}:00.000+00:00"

GENERATOR = '''"""Generator of {id}: a planted signal in a micro tabular task."""
import numpy as np, pandas as pd

def generate(rng_seed: int = {seed}):
    rng = np.random.default_rng(rng_seed)
    n = 120
    x1 = rng.normal(size=n)
    x2 = rng.choice(["a", "b", "c"], size=n)
    y = (x1 + (x2 == "a") + rng.normal(scale=0.5, size=n) > 0.5).astype(int)
    return pd.DataFrame({{"id": range(n), "x1": x1, "x2": x2, "label": y}})
'''


def _write_env_files(root: Path, env_id: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    public, private = root / "public", root / "private"
    public.mkdir(parents=True, exist_ok=True)
    private.mkdir(parents=True, exist_ok=True)
    train = ["id,x1,x2,age,label"]
    for i in range(60):
        x1 = round(rng.gauss(0, 1), 3)
        x2 = rng.choice("abc")
        age = "" if i % 10 == 3 else str(rng.randint(18, 80))
        label = int(x1 + (x2 == "a") > 0.5)
        train.append(f"{i},{x1},{x2},{age},{label}")
    test = ["id,x1,x2,age"] + [f"{100 + i},{round(rng.gauss(0, 1), 3)},{rng.choice('abc')},{rng.randint(18, 80)}"
                                for i in range(20)]
    (public / "train.csv").write_text("\n".join(train) + "\n")
    (public / "test.csv").write_text("\n".join(test) + "\n")
    (public / "sample_submission.csv").write_text("id,label\n" + "".join(f"{100 + i},0\n" for i in range(20)))
    (public / "description.md").write_text(
        f"# Predict the label ({env_id})\n\nA micro tabular task: 60 training rows, a planted signal in `x1` and "
        "`x2`, missing values in `age`.\n\nSubmit `id,label` for every test row. Metric: accuracy.\n")
    (private / "answers.csv").write_text("id,label\n" + "".join(f"{100 + i},{i % 2}\n" for i in range(20)))
    (private / "grade.json").write_text(json.dumps({"metric": "accuracy", "lower_is_better": False, "id_column": "id",
                                                    "target_columns": ["label"], "prediction_columns": ["label"]}))
    (root / "generator.py").write_text(GENERATOR.format(id=env_id, seed=seed))
    files = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = str(path.relative_to(root))
        role = "public" if rel.startswith("public") else "private" if rel.startswith("private") else "generator"
        files.append({"path": rel, "role": role, "sha256": "0" * 64, "size": path.stat().st_size})
    return files


def add_envs(store: Store, n: int = 3) -> list[str]:
    ids = []
    for i in range(n):
        env_id = f"env-tab-{i:03d}"
        root = store.data_dir / "envs" / env_id
        files = _write_env_files(root, env_id, 100 + i)
        rejected = i == n - 1
        store.envs.add(
            {"id": env_id, "seed_id": "forest-cover", "title": f"Predict the label, variant {i}",
             "status": "rejected" if rejected else "verified",
             "reason": "reference scores not ordered: simple ≥ strong" if rejected else None,
             "modality": "tabular", "task_type": "binary", "metric": "accuracy", "lower_is_better": False,
             "id_column": "id", "target_columns": ["label"], "n_train": 60, "n_test": 20, "backend": "procedural",
             "rng_seed": 100 + i, "thresholds": {"gold": 0.9, "silver": 0.85, "bronze": 0.8, "median": 0.7},
             "verification": {"files": {"ok": True, "rows": 60}, "ordering": {"ok": not rejected, "trivial": 0.5,
                                                                             "simple": 0.78, "strong": 0.91}},
             "dir": str(root), "created_at": T0.format(i)},
            files=files,
            leaderboard=[{"name": name, "score": score, "rng_seed": 0, "source": "reference", "wall_s": w}
                         for name, score, w in (("trivial", 0.5, 0.4), ("simple", 0.78, 0.9), ("strong", 0.91, 2.1))],
        )
        store.envs.add_attempt({"env_id": env_id, "seed_id": "forest-cover", "role": "verifier", "attempt": 1,
                                "backend": "procedural", "verdict": "reject" if rejected else "ok",
                                "feedback": "scores not ordered" if rejected else None, "wall_s": 3.2,
                                "created_at": T0.format(i)})
        ids.append(env_id)
    return ids


def add_sandbox_runs(store: Store, env_id: str | None = None) -> tuple[str, Path]:
    """Two sandbox runs; returns the running one's id and its (growing) log path."""
    logs = store.data_dir / "sandbox-logs"
    logs.mkdir(parents=True, exist_ok=True)
    done_log = logs / "sbx-done.log"
    done_log.write_text("$ python solution.py\n--- stdout ---\n" + "".join(f"epoch {i} loss {1 / (i + 1):.4f}\n"
                                                                           for i in range(40)))
    store.sandbox.start({"id": "sbx-done", "env_id": env_id, "backend": "local", "command": "python solution.py",
                         "limits": {"timeout_s": 300, "memory_mb": 4096}, "log_path": str(done_log),
                         "started_at": T0.format(1)})
    store.sandbox.finish("sbx-done", status="ok", exit_code=0, wall_s=1.8, cpu_s=1.6, peak_rss_mb=212.0,
                         ended_at=T0.format(2))
    live_log = logs / "sbx-live.log"
    live_log.write_text("$ python train.py\nstarting\n")
    store.sandbox.start({"id": "sbx-live", "env_id": env_id, "backend": "local", "command": "python train.py",
                         "limits": {"timeout_s": 300, "memory_mb": 4096}, "log_path": str(live_log),
                         "started_at": T0.format(3), "pid": None})  # no owner: stays running in every session
    return "sbx-live", live_log


def add_training(store: Store, env_ids: list[str]) -> str:
    run_id = store.runs.create("grpo", {"model": "tiny", "group_size": 2, "steps": 12, "env_split": "train"},
                               run_id="grpo-demo", status="running")
    store.runs.update(run_id, created_at=T0.format(4), started_at=T0.format(4), pid=None)
    for step in range(1, 13):
        store.runs.log_metrics(run_id, step, {
            "reward_mean": round(0.2 + 0.5 * (1 - math.exp(-step / 4)), 4),
            "medal_rate": round(min(1.0, step / 16), 4), "valid_rate": round(min(1.0, 0.5 + step / 20), 4),
            "loss": round(1.2 * math.exp(-step / 5) + 0.1, 4)})
    store.runs.add_checkpoint(run_id, 10, str(store.data_dir / "runs" / run_id / "step-10"), "0" * 64)
    store.runs.finish(run_id, "done", summary={"reward_mean": 0.69})
    store.runs.update(run_id, ended_at=T0.format(9))
    for k, reward in enumerate((0.9, 0.3)):
        store.trajectories.add(Trajectory(
            id=f"traj-{k}", run_id=run_id, env_id=env_ids[0], policy="tiny-qwen3+lora", scaffold="react",
            group_id=f"{run_id}/s00012/g01", step=12, rng_seed=k, status="done", terminated=True, reward=reward,
            turns=demo_turns(k == 0),
            reward_breakdown={
                "scheme": "milestone", "total": reward, "uncapped": reward,
                "terms": {"valid": {"weight": 0.2, "value": float(k == 0), "reward": 0.2 if k == 0 else 0.0},
                          "medal": {"weight": 1.0, "value": 0.6 if k == 0 else 0.0, "reward": 0.6 if k == 0 else 0.0},
                          "format": {"weight": 0.1, "value": 1.0 if k == 0 else 0.5, "reward": 0.1 if k == 0 else 0.05}}},
            state={"steps": 3, "python_calls": 2, "score_calls": 0, "timed_out_steps": 0, "elapsed_s": 4.0},
            grade={"score": 0.87 if k == 0 else None, "valid_submission": k == 0, "silver_medal": k == 0,
                   "any_medal": k == 0, "error": None if k == 0 else "no submission.csv"},
            wall_s=4.0, created_at=T0.format(5 + k)))
    return run_id


EXPLORE = "import pandas as pd\ndf = pd.read_csv('train.csv')\nprint(df.shape)\nprint(df.head(12))"
FIT = ("import pandas as pd\nfrom sklearn.ensemble import HistGradientBoostingClassifier as H\n"
       "train, test = pd.read_csv('train.csv'), pd.read_csv('test.csv')\nX = pd.get_dummies(train.drop(columns=['id', 'label']))\n"
       "model = H().fit(X, train['label'])\npd.DataFrame({'id': test['id'], 'label': model.predict("
       "pd.get_dummies(test.drop(columns=['id'])).reindex(columns=X.columns, fill_value=0))}).to_csv('submission.csv', index=False)")


def _call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"


def demo_turns(good: bool) -> list[Turn]:
    """A react episode as the scaffold stores it: system prompt, task, then assistant / tool turns."""
    head = "\n".join(f"{i:>3}  {0.1 * i - 0.5:+.3f}  {'abc'[i % 3]}  {20 + i}  {i % 2}" for i in range(12))
    fit_obs = "wrote submission.csv (20 rows)" if good else "ValueError: could not convert string to float: 'a'"
    return [
        Turn("system", "You are a machine-learning engineer solving a task in a sandbox with no network."
                       "\nEach turn: think inside <think>...</think>, then one tool call."),
        Turn("user", "# Predict the label (env-tab-000)\n\nA micro tabular task: 60 training rows.\n"
                     "Submit `id,label` for every test row. Metric: accuracy."),
        Turn("assistant", "<think>Look at the data first.</think>" + _call(EXPLORE), tool="python", code=EXPLORE,
             well_formed=True, wall_s=0.4, token_ids=list(range(38))),
        Turn("tool", "", tool="python", code=EXPLORE, wall_s=1.1,
             observation=f"(60, 5)\n     id      x1 x2  age  label\n{head}"),
        Turn("assistant", "<think>Gradient boosting on one-hot columns.</think>" + _call(FIT), tool="python",
             code=FIT, well_formed=good, wall_s=0.6, token_ids=list(range(61))),
        Turn("tool", "", tool="python", code=FIT, wall_s=2.3, observation=fit_obs),
        Turn("assistant", "<think>Done.</think><answer>done</answer>", tool="answer", well_formed=True, wall_s=0.1,
             token_ids=list(range(9))),
    ]


def add_eval(store: Store, env_ids: list[str]) -> list[str]:
    """Two eval runs of the same environments and seeds: the SFT adapter, then SFT+GRPO (paired episodes), each
    episode stored turn by turn as ``sandmle eval`` stores it."""
    ids = []
    for k, (run_id, name, adapter_run) in enumerate((("eval-sft", "SFT heldout", "sft-demo"),
                                                     ("eval-demo", "SFT+GRPO heldout", "grpo-demo"))):
        adapter = store.data_dir / "runs" / adapter_run / "adapter"
        spec = f"hf:tiny,adapter={adapter},temperature=0.6"
        store.runs.create("eval", {"policy": "hf:tiny", "policy_spec": spec, "scaffold": "react",
                                   "envs": env_ids[:2], "rng_seeds": [0, 1, 2]}, run_id=run_id, name=name)
        store.runs.update(run_id, created_at=T0.format(10 + k), started_at=T0.format(10 + k), pid=None)
        results = []
        for e, env_id in enumerate(env_ids[:2]):
            for seed in range(3):
                medal = (e + seed + k) % 2 == 0 if k else seed == 0 and e == 0
                score, reward = 0.7 + 0.05 * seed + 0.03 * k, 0.7 if medal else 0.3
                results.append({"env_id": env_id, "policy": "hf:tiny", "scaffold": "react", "rng_seed": seed,
                                "score": score, "valid": True, "bronze": medal,
                                "gold": False, "rank": 0.5 + 0.1 * seed + 0.05 * k, "reward": reward})
                store.trajectories.add(Trajectory(
                    id=f"{run_id}-{e}-{seed}", run_id=run_id, env_id=env_id, policy=f"hf:tiny+{adapter_run}",
                    scaffold="react", rng_seed=seed, status="done", terminated=True, reward=reward,
                    turns=demo_turns(True), grade={"score": score, "valid_submission": True, "bronze_medal": medal,
                                                   "any_medal": medal, "error": None},
                    wall_s=3.0, created_at=T0.format(10 + k)))
        store.runs.add_eval_results(run_id, results)
        store.runs.finish(run_id, "done")
        store.runs.update(run_id, ended_at=T0.format(11 + k).replace(":00.000", ":42.000"))
        ids.append(run_id)
    return ids


def populate(store: Store) -> dict:
    load_shipped(store)
    envs = add_envs(store)
    live_id, live_log = add_sandbox_runs(store, envs[0])
    return {"envs": envs, "live_sandbox": live_id, "live_log": live_log, "grpo": add_training(store, envs),
            "eval": add_eval(store, envs)[-1]}
