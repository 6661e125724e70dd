"""``react`` — the training scaffold: one ``<tool_call>`` (python / score) or a final ``<answer>`` per turn, the
observation back as a ``tool`` message, until the answer, ``max_turns`` or the episode's time budget."""

from __future__ import annotations

import time

from ..env import MLEEnv
from ..format import parse_turn
from ..policy import Policy
from ..prompts import REACT_REPLY, react_system, with_reply
from .base import Transcript, seed_for


def run(env: MLEEnv, policy: Policy, *,
        max_turns: int = 15, rng_seed: int | None = None, transcript: Transcript | None = None) -> Transcript:
    env.max_steps = max_turns
    task, _ = env.reset(seed=rng_seed)
    tr = transcript if transcript is not None else Transcript()
    tr.add("system", react_system(max_turns))
    tr.add("user", with_reply(task, REACT_REPLY))
    for turn in range(max_turns):
        action, _ = tr.act(policy, tr.turns, seed_for(rng_seed, turn))
        parsed = parse_turn(action.text)
        me = tr.turns[-1]
        me.well_formed = parsed.well_formed
        if parsed.call is not None:
            me.tool = parsed.call.name
            me.code = parsed.call.code
        t = time.monotonic()
        result = env.step(parsed.call, error=parsed.error)
        obs = result.observation
        if parsed.call is not None and not parsed.well_formed and parsed.error:
            obs = f"{obs}\n[format warning: {parsed.error}]"
        if parsed.call is not None and parsed.call.name == "answer":
            break  # the answer ends the episode: no observation follows it
        tr.add("tool", obs, tool=parsed.call.name if parsed.call else None,
               code=parsed.call.code if parsed.call else None, observation=obs, wall_s=time.monotonic() - t)
        if result.terminated or result.truncated:
            break
    return tr
