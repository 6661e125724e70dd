"""One episode end to end: open a sandbox workspace, let the policy act through a scaffold, take the submission out,
grade it OUTSIDE the sandbox, compute the reward, store the trajectory turn by turn.

How an episode ends (``Trajectory.status``): ``done``; ``timeout`` (its wall-clock budget ran out: GRPO masks it);
``failed`` — a fault the agent caused (a :class:`~engine.errors.WorkspaceFault`: the step file's place taken by a
folder or a link out, a folder it made unwritable): the agent's, so a result like any other, reward 0, counted in
every rate and trained on; ``error`` — a fault of the infrastructure (the sandbox cannot start or run, the policy's
endpoint is down, a bug in a policy, the grading itself failed: an evaluator's run that died or ran out of time as a
whole, a grading sandbox that would not start): not a result, reward 0 for a grading fault, left out of every
rate, counted apart and played again by ``runs resume``. A submission the grader rejects is the agent's: ``done``,
graded invalid."""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from store import Store
from store.trajectories import Trajectory

from ..envs.layout import EnvSpec
from ..config import load_settings
from ..errors import FileTooLarge, GradingError, SandboxError, WorkspaceFault
from ..grading.grade import GradeReport, grade, oversize_report
from ..grading.rewards import compute_reward
from ..sandbox import RunMeta, SandboxBackend, get_backend
from .env import MLEEnv
from .policy import Policy, ScaffoldAware
from .scaffolds import get_scaffold
from .scaffolds.base import Transcript


def new_trajectory_id() -> str:
    return f"traj-{uuid.uuid4().hex[:12]}"


def register_env(store: Store, env: EnvSpec, *, split: str | None = None) -> None:
    """Make sure the store has a row for ``env`` (trajectories and eval results point at it); a real competition
    is (re)filed under the split ``real``, which training never selects."""
    split = split or env.split
    row = store.envs.find(env.id)
    source = {"human": "human", "population": "population"}.get(env.board or "", "import")
    entries = [{"name": f"entry-{i}", "score": float(s), "source": source} for i, s in enumerate(env.leaderboard)]
    if row is not None:
        if split == "real" and row["split"] != "real":
            store.envs.set_split([env.id], "real")
        if env.leaderboard and len(store.envs.leaderboard(env.id)) != len(env.leaderboard):
            store.envs.replace_board(env.id, entries, thresholds=env.thresholds)  # a board built since
        return
    g = env.grade
    store.envs.add({
        "id": env.id, "seed_id": None, "title": env.title or env.id, "status": "verified", "split": split,
        "modality": env.modality or "tabular", "task_type": g.task_type or "", "metric": g.metric,
        "lower_is_better": int(g.lower_is_better), "id_column": g.id_column, "target_columns": g.target_columns,
        "thresholds": env.thresholds, "dir": str(env.dir),
    }, leaderboard=entries)


def _submissions_dir(store: Store | None) -> Path:
    if store is not None:
        path = Path(store.data_dir) / "submissions"
    else:
        path = Path(tempfile.gettempdir()) / "sandmle-submissions"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _grade(env: EnvSpec, submission_path: str | None, oversize: FileTooLarge | None) -> tuple[GradeReport, str | None]:
    """(the grade report, None) — or, when the grading itself failed (the evaluator's run died or ran out of time
    as a whole, the grading sandbox could not start, the environment's answers are missing), (a report with no
    score that says so, the fault in one line). An invalid submission is a grade like any other: the agent's."""
    if oversize is not None:
        return oversize_report(env, oversize.size), None
    try:
        return grade(env, submission_path), None
    except (SandboxError, GradingError) as exc:  # GradingFault too (any other InvalidSubmission is in the report)
        fault = f"grading fault: {type(exc).__name__}: {exc}"
        return GradeReport(competition_id=env.id, score=None, valid_submission=False,
                           submission_exists=submission_path is not None, is_lower_better=env.grade.lower_is_better,
                           error=fault, submission_path=submission_path), fault


def run_episode(env: EnvSpec, policy: Policy, *, scaffold: str = "react", sandbox: SandboxBackend | None = None,
                store: Store | None = None, run_id: str | None = None, group_id: str | None = None,
                step: int | None = None, rng_seed: int | None = None, max_turns: int = 15, step_timeout_s: float | None = None,
                episode_timeout_s: float = 1200, reward: str = "milestone",
                trajectory_id: str | None = None, on_turn=None) -> Trajectory:
    """Run one episode of ``policy`` on ``env`` through ``scaffold``; store it when ``store`` is given. Code runs
    in ``sandbox`` (default: the backend and limits of the settings, ``[sandbox]``); a step's wall time is
    ``step_timeout_s`` (default: the backend's limit)."""
    entry = get_scaffold(scaffold)
    if isinstance(policy, ScaffoldAware):  # it writes its replies itself: it needs to know which format
        policy = policy.in_scaffold(entry.name, entry.reply)
    traj_id = trajectory_id or new_trajectory_id()
    own_backend = sandbox is None
    if sandbox is None:
        sandbox = get_backend(store=store, settings=load_settings().sandbox)
    if store is not None:
        register_env(store, env)
    meta = RunMeta(env_id=env.id if store is not None else None, run_id=run_id, trajectory_id=traj_id)
    menv = MLEEnv(env.id, env.public, env.grade, sandbox, max_steps=max_turns, step_timeout_s=step_timeout_s,
                  episode_timeout_s=episode_timeout_s, meta=meta)
    t0 = time.monotonic()
    transcript = Transcript(on_turn=on_turn)
    status, error = "done", None
    submission_path: str | None = None
    oversize: FileTooLarge | None = None
    interrupted: BaseException | None = None
    try:
        try:
            transcript = entry.run(menv, policy, max_turns=max_turns, rng_seed=rng_seed, transcript=transcript)
        except KeyboardInterrupt as exc:
            status, error, interrupted = "error", "interrupted", exc
        except WorkspaceFault as exc:  # the agent broke its own workspace: its failure, not the harness's
            status, error = "failed", f"workspace fault: {exc}"
        except Exception as exc:  # noqa: BLE001 - a failing policy/backend ends this episode, not the batch
            status, error = "error", f"{type(exc).__name__}: {exc}"
        if menv.ws is not None and status != "failed":
            path = _submissions_dir(store) / f"{traj_id}.csv"
            try:
                if menv.save_submission(path):
                    submission_path = str(path)
            except FileTooLarge as exc:  # left in the workspace, unread
                oversize = exc
            except SandboxError as exc:  # not a regular file: graded as no submission, and said why
                error = error or str(exc)
    finally:
        menv.close()
        if own_backend:
            sandbox.close()
    render = getattr(policy, "render_messages", None)
    if callable(render) and transcript.turns:
        render(transcript.turns)  # token ids of turns the model never had to read (the last observation)
    state = menv.state
    report, fault = _grade(env, submission_path, oversize)
    total, breakdown = compute_reward(report, transcript.turns, reward)
    if status == "failed":  # a failed episode earns nothing, format included; its submission is not taken
        report.error = error
        total, breakdown = 0.0, {"failed": 0.0}
    elif fault is not None:  # the grader failed, not the agent: no result, never a reward (masked, played again)
        status, error = "error", f"{error}; {fault}" if error else fault
        total, breakdown = 0.0, {"grading fault": 0.0}
    if state.timed_out and status == "done":
        status = "timeout"
    traj = Trajectory(
        id=traj_id, env_id=env.id, policy=getattr(policy, "name", type(policy).__name__), scaffold=scaffold,
        turns=transcript.turns, terminated=state.terminated, truncated=state.truncated, timed_out=state.timed_out,
        submission_path=submission_path, grade=report.to_dict(), reward=total, reward_breakdown=breakdown,
        wall_s=time.monotonic() - t0, sandbox_s=state.sandbox_s, group_id=group_id, step=step, rng_seed=rng_seed,
        run_id=run_id, status=status, error=error,
        state={**state.to_dict(), **({"usage": {**transcript.usage}} if transcript.usage else {}),
               **transcript.extra},
    )
    if store is not None:
        store.trajectories.add(traj)
    if interrupted is not None:
        raise interrupted
    return traj
