"""The environment interface every scaffold shares, in the spirit of Gymnasium: ``reset`` / ``step`` / ``close``,
``terminated`` (the agent answered) kept apart from ``truncated`` (a budget ran out), and a typed state.

The env holds a sandbox workspace with a copy of ``public/`` plus the validation split (``val/``). It is built from
the public folder and the grading spec only — never from ``private/`` — so nothing an agent does here can reach
the hidden answers. Final grading happens outside, in :mod:`engine.agents.rollout`.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..envs.layout import GradeSpec
from ..errors import SandboxError
from ..grading.grade import submission_limit, too_large
from ..sandbox.base import Limits, RunMeta, SandboxBackend, Workspace
from ..sandbox.text import head_tail
from .format import ToolCall
from .prompts import task_prompt
from .score_tool import VAL_SUBMISSION, ValidationSplit, carve, parse_score, score_validation

SUBMISSION = "submission.csv"


@dataclass
class EpisodeState:
    env_id: str
    steps: int = 0
    python_calls: int = 0
    score_calls: int = 0
    elapsed_s: float = 0.0
    sandbox_s: float = 0.0
    timed_out_steps: int = 0
    last_val_score: float | None = None
    best_val_score: float | None = None
    answer: str | None = None
    terminated: bool = False
    truncated: bool = False
    timed_out: bool = False  #: the episode's wall-clock budget ran out (masked, not punished, by GRPO)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StepResult:
    observation: str
    reward: float  #: always 0.0 here: the reward comes from grading the final submission outside the env
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)


class MLEEnv:
    """One episode's environment. ``step`` takes a :class:`ToolCall` (``python``, ``score`` or ``answer``) or
    ``None`` for a turn that held no executable call (the observation then carries ``error``)."""

    def __init__(self, env_id: str, public: Path, grade: GradeSpec, backend: SandboxBackend, *,
                 max_steps: int = 15, step_timeout_s: float | None = None, episode_timeout_s: float = 1200.0,
                 observation_chars: int = 4000, limits: Limits | None = None, meta: RunMeta | None = None,
                 val_fraction: float = 0.2, lower_is_better: bool | None = None):
        self.env_id = env_id
        self.public = Path(public)
        self.grade = grade
        self.backend = backend
        self.max_steps = max_steps
        self.limits = limits or backend.default_limits
        #: a code step's wall time (default: the sandbox's limit)
        self.step_timeout_s = self.limits.timeout_s if step_timeout_s is None else step_timeout_s
        self.episode_timeout_s = episode_timeout_s
        self.observation_chars = observation_chars
        self.meta = meta or RunMeta()
        #: the most bytes taken out of the workspace at once (a submission, a validation submission)
        self.max_read_bytes = submission_limit(self.public)
        self.val_fraction = val_fraction
        self.ws: Workspace | None = None
        self.split: ValidationSplit | None = None
        self.state = EpisodeState(env_id=env_id)
        self._t0 = 0.0

    # ------------------------------------------------------------------ lifecycle
    def reset(self, *, seed: int | None = None) -> tuple[str, dict[str, Any]]:
        """Open a fresh workspace with the public files and the validation split; return the task prompt."""
        self.close()
        self.state = EpisodeState(env_id=self.env_id)
        self._t0 = time.monotonic()
        t = time.monotonic()
        self.ws = self.backend.open(self.public, label=self.env_id)
        self.split = carve(self.public, self.grade, key=self.env_id, fraction=self.val_fraction)
        for rel, data in self.split.files.items():
            self.ws.write_file(rel, data)
        for rel, target in self.split.links.items():
            self.ws.link(rel, target)
        self.state.sandbox_s += time.monotonic() - t
        info = {"n_train": self.split.n_train, "n_val": self.split.n_val, "score_tool": self.split.answers is not None}
        return task_prompt(self.public, with_validation=self.split.answers is not None), info

    def close(self) -> None:
        if self.ws is not None:
            self.ws.close()
            self.ws = None

    def __enter__(self) -> "MLEEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ budgets
    @property
    def remaining_s(self) -> float:
        return self.episode_timeout_s - (time.monotonic() - self._t0)

    def _finish_step(self, observation: str, info: dict[str, Any]) -> StepResult:
        s = self.state
        s.steps += 1
        s.elapsed_s = time.monotonic() - self._t0
        if not s.terminated:
            if s.elapsed_s >= self.episode_timeout_s:
                s.truncated = s.timed_out = True
            elif s.steps >= self.max_steps:
                s.truncated = True
        return StepResult(head_tail(observation, self.observation_chars), 0.0, s.terminated, s.truncated, info)

    @property
    def workspace(self) -> Workspace:
        """The episode's sandbox workspace (there is one between reset() and close())."""
        if self.ws is None:
            raise SandboxError("the environment has no workspace: call reset() first")
        return self.ws

    @property
    def validation(self) -> ValidationSplit:
        """The validation split carved from the training rows at reset()."""
        if self.split is None:
            raise SandboxError("the environment has no validation split: call reset() first")
        return self.split

    # ------------------------------------------------------------------ the step
    def step(self, call: ToolCall | None, *, error: str | None = None) -> StepResult:
        if self.ws is None:
            raise SandboxError("step() before reset()")
        if self.state.terminated or self.state.truncated:
            raise SandboxError("the episode is over; call reset()")
        info: dict[str, Any] = {"tool": call.name if call else None}
        if call is None:
            return self._finish_step(f"format error: {error or 'no tool call'}. Reply with <think>...</think> "
                                     "then one <tool_call>{...}</tool_call> or <answer>...</answer>.", info)
        if call.name == "answer":
            self.state.answer = str(call.arguments.get("text", ""))
            self.state.terminated = True
            has_sub = self.exists(SUBMISSION)
            info["submission"] = has_sub
            obs = "episode finished" + ("" if has_sub else f" (warning: no {SUBMISSION} was written)")
            return self._finish_step(obs, info)
        if call.name == "score":
            self.state.score_calls += 1
            t = time.monotonic()
            path = str(call.arguments.get("path") or VAL_SUBMISSION)
            size = self.workspace.size(VAL_SUBMISSION)
            if path != VAL_SUBMISSION:
                obs = f"the score tool grades {VAL_SUBMISSION} only"
            elif size is not None and size > self.max_read_bytes:
                obs = f"invalid {VAL_SUBMISSION}: {too_large(size, self.max_read_bytes)}"
            else:
                obs = score_validation(self.grade, self.validation, self.read(VAL_SUBMISSION), public=self.public,
                                       sandbox=self.backend)
            self.state.sandbox_s += time.monotonic() - t
            value = parse_score(obs)
            info["val_score"] = value
            if value is not None:
                self.state.last_val_score = value
                best = self.state.best_val_score
                better = best is None or (value < best if self.grade.lower_is_better else value > best)
                self.state.best_val_score = value if better else best
            return self._finish_step(obs, info)
        if call.name == "python":
            code = call.code or ""
            self.state.python_calls += 1
            return self._finish_step(*self.run_python(code, info))
        return self._finish_step(f"unknown tool {call.name!r}", info)

    def run_python(self, code: str, info: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        info = info if info is not None else {}
        timeout = max(1.0, min(self.step_timeout_s, self.remaining_s))
        lim = dataclasses.replace(self.limits, timeout_s=timeout, cpu_s=min(self.limits.cpu_s, max(timeout * 2, 1.0)))
        t = time.monotonic()
        # a WorkspaceFault here (the step file's place taken by a folder or a link out) is the agent's doing: it
        # ends the episode as failed (reward 0), counted in every rate (engine.agents.rollout)
        result = self.workspace.run_python(code, limits=lim, meta=self.meta)
        self.state.sandbox_s += time.monotonic() - t
        if result.status == "timeout":
            self.state.timed_out_steps += 1
        info.update(status=result.status, exit_code=result.exit_code, sandbox_run_id=result.run_id,
                    wall_s=result.wall_s)
        return result.observation(self.observation_chars), info

    # ------------------------------------------------------------------ files (through the workspace interface)
    def read(self, relpath: str) -> bytes | None:
        """A workspace file, or None when there is none or it is over :attr:`max_read_bytes`."""
        try:
            return self.workspace.read_file(relpath, max_bytes=self.max_read_bytes)
        except SandboxError:
            return None

    def exists(self, relpath: str) -> bool:
        return self.workspace.size(relpath) is not None

    def remove(self, relpath: str) -> None:
        self.workspace.remove(relpath)

    def save_submission(self, dest: Path) -> bool:
        """Copy ``submission.csv`` out to ``dest``, streamed; False when there is none. :class:`FileTooLarge`
        (nothing copied) when it is over :attr:`max_read_bytes`."""
        if self.workspace.size(SUBMISSION) is None:
            return False
        self.workspace.copy_out(SUBMISSION, dest, max_bytes=self.max_read_bytes)
        return True
