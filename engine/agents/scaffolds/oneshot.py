"""``oneshot`` — one script, one run: the policy writes a whole program once; whatever submission.csv it leaves
is graded."""

from __future__ import annotations

import time

from ..env import MLEEnv
from ..format import ToolCall, extract_code, parse_turn
from ..policy import Policy
from ..prompts import ONESHOT_SYSTEM, SCRIPT_REPLY, with_reply
from .base import Transcript, seed_for


def run(env: MLEEnv, policy: Policy, *,
        max_turns: int = 1, rng_seed: int | None = None, transcript: Transcript | None = None) -> Transcript:
    env.max_steps = 2
    task, _ = env.reset(seed=rng_seed)
    tr = transcript if transcript is not None else Transcript()
    tr.add("system", ONESHOT_SYSTEM)
    tr.add("user", with_reply(task, SCRIPT_REPLY))
    action, _ = tr.act(policy, tr.turns, seed_for(rng_seed, 0))
    code = extract_code(action.text)
    me = tr.turns[-1]
    me.well_formed = code is not None and parse_turn(action.text).think != ""
    me.tool, me.code = ("python", code) if code else (None, None)
    t = time.monotonic()
    if code is None:
        result = env.step(None, error="no ```python block in the reply")
    else:
        result = env.step(ToolCall("python", {"code": code}))
    tr.add("tool", result.observation, tool="python" if code else None, code=code,
           observation=result.observation, wall_s=time.monotonic() - t)
    if not env.state.truncated:
        env.step(ToolCall("answer", {"text": "oneshot"}))
    return tr
