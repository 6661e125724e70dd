"""``aide`` — draft / debug / improve tree search over whole scripts (after AIDE, Jiang et al. 2025).

A journal keeps every node (code, output, validation metric, parent). Each step picks an action: draft until
``num_drafts`` drafts exist; else debug a buggy leaf (depth ≤ ``max_debug_depth``); else improve the best node.
Each script runs whole in the workspace and must write ``val/submission.csv`` (scored by the score tool: the node's
metric) and ``submission.csv``. The best node's ``submission.csv`` is the episode's submission.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from typing import Sequence

from store.trajectories import Turn

from ..env import SUBMISSION, MLEEnv
from ..format import ToolCall, extract_code, parse_turn
from ..policy import Policy
from ..prompts import AIDE_SYSTEM, aide_stage_prompt
from ..score_tool import VAL_SUBMISSION
from .base import Transcript, seed_for


@dataclass
class Node:
    id: int
    stage: str  #: draft | debug | improve
    parent: int | None
    code: str | None
    output: str = ""
    metric: float | None = None
    buggy: bool = True
    debug_depth: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


class Journal:
    def __init__(self, lower_is_better: bool):
        self.nodes: list[Node] = []
        self.lower_is_better = lower_is_better

    def good(self) -> list[Node]:
        return [n for n in self.nodes if not n.buggy]

    def best(self) -> Node | None:
        """The best node by validation metric; without any metric (no score tool), the latest working node."""
        good = self.good()
        scored = [n for n in good if n.metric is not None]
        if scored:
            return (min if self.lower_is_better else max)(scored, key=lambda n: n.metric or 0.0)
        return good[-1] if good else None

    def buggy_leaves(self, max_depth: int) -> list[Node]:
        parents = {n.parent for n in self.nodes}
        return [n for n in self.nodes if n.buggy and n.id not in parents and n.debug_depth < max_depth
                and n.code is not None]

    def summary(self, limit: int = 6) -> str:
        lines = []
        for n in self.nodes[-limit:]:
            state = "bug" if n.buggy else ("ok" if n.metric is None else f"metric {n.metric:.4g}")
            lines.append(f"node {n.id} ({n.stage}{'' if n.parent is None else f' of {n.parent}'}): {state}")
        return "\n".join(lines)


def _pick(journal: Journal, num_drafts: int, max_debug_depth: int, rng: random.Random) -> tuple[str, Node | None]:
    drafts = [n for n in journal.nodes if n.stage == "draft"]
    if len(drafts) < num_drafts:
        return "draft", None
    leaves = journal.buggy_leaves(max_debug_depth)
    if leaves and (journal.best() is None or rng.random() < 0.5):
        return "debug", rng.choice(leaves)
    best = journal.best()
    if best is None:
        return "draft", None
    return "improve", best


def reply_contexts(turns: Sequence[Turn]) -> list[list[Turn]]:
    """What each reply of an aide episode was written after — the system prompt and that step's prompt (the task,
    the journal and the stage), not the episode's history — each followed by the reply: one sequence per step,
    as the policy saw it (what SFT on aide episodes trains on)."""
    return [[turns[0], turns[i - 1], t] for i, t in enumerate(turns)
            if t.role == "assistant" and i >= 2 and turns[i - 1].role == "user" and turns[0].role == "system"]


def run(env: MLEEnv, policy: Policy, *,
        max_turns: int = 8, rng_seed: int | None = None, transcript: Transcript | None = None,
        num_drafts: int = 2, max_debug_depth: int = 2) -> Transcript:
    env.max_steps = 2 * max_turns + 2
    task, _ = env.reset(seed=rng_seed)
    tr = transcript if transcript is not None else Transcript()
    system = tr.add("system", AIDE_SYSTEM)
    journal = Journal(env.grade.lower_is_better)
    rng = random.Random(rng_seed or 0)
    for step in range(max_turns):
        if env.state.truncated or env.remaining_s <= 1:
            break
        stage, parent = _pick(journal, num_drafts, max_debug_depth, rng)
        prompt = aide_stage_prompt(stage, task, code=parent.code if parent else None,
                                   output=parent.output if parent else None,
                                   metric=parent.metric if parent else None, journal=journal.summary())
        user = tr.add("user", prompt)
        action, _ = tr.act(policy, [system, user], seed_for(rng_seed, step))
        code = extract_code(action.text)
        me = tr.turns[-1]
        me.well_formed = code is not None and parse_turn(action.text).think != ""
        me.tool, me.code = ("python", code) if code else (None, None)
        node = Node(id=len(journal.nodes), stage=stage, parent=parent.id if parent else None, code=code,
                    debug_depth=(parent.debug_depth + 1) if stage == "debug" and parent else 0)
        journal.nodes.append(node)
        t = time.monotonic()
        if code is None:
            node.output = "no ```python block in the reply"
            tr.add("tool", node.output, observation=node.output, wall_s=0.0)
            continue
        twin = next((n for n in journal.nodes[:-1] if n.code == code), None)
        if twin is not None:  # the same script again: reuse its result instead of re-running it
            node.metric, node.buggy, node.output = twin.metric, twin.buggy, twin.output
            if not twin.buggy:
                data = env.read(f".aide/node_{twin.id}.csv")
                if data is not None:
                    env.workspace.write_file(f".aide/node_{node.id}.csv", data)
            obs = f"[same script as node {twin.id}: result reused]\n{twin.output}"
            tr.add("tool", obs, tool="python", code=code, observation=obs, wall_s=0.0)
            continue
        env.remove(SUBMISSION)
        env.remove(VAL_SUBMISSION)
        result = env.step(ToolCall("python", {"code": code}))
        obs = result.observation
        if not env.state.truncated:
            scored = env.step(ToolCall("score", {}))
            node.metric = scored.info.get("val_score")
            obs = f"{obs}\n[score] {scored.observation}"
        sub = env.read(SUBMISSION)
        scorable = env.split is not None and env.split.answers is not None
        node.buggy = sub is None or (scorable and node.metric is None)
        if sub is not None and not node.buggy:
            env.workspace.write_file(f".aide/node_{node.id}.csv", sub)
        node.output = obs
        tr.add("tool", obs, tool="python", code=code, observation=obs, wall_s=time.monotonic() - t)
    best = journal.best()
    env.remove(SUBMISSION)
    if best is not None:
        data = env.read(f".aide/node_{best.id}.csv")
        if data is not None:
            env.workspace.write_file(SUBMISSION, data)
    if not env.state.timed_out:  # the search ends by choosing its best node: an answer, not a cut
        env.state.truncated = False
        env.state.terminated = True
        env.state.answer = f"best node {best.id if best else None}"
    tr.extra["journal"] = [n.to_dict() for n in journal.nodes]
    return tr
