"""Scaffolds: how a policy acts in an environment. Each is a module with a function
``run(env: MLEEnv, policy, *, max_turns, rng_seed, transcript) -> Transcript`` over the shared env interface, and
one :class:`Scaffold` entry in :data:`SCAFFOLDS` — the one list the CLI's ``--scaffold`` choices, the eval and
training configs, the default turn budgets and the policies that play a reply format read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import SandmleError
from . import aide, oneshot, react
from .base import Transcript

#: the reply formats a scaffold can ask of a policy (a policy that writes replies itself, as the scripted teacher
#: does, plays each one): ``tool_calls`` — one ``<tool_call>`` (or the ``<answer>``) per turn, its observation
#: back; ``staged_scripts`` — a whole script per call for a draft / debug / improve stage named in the prompt;
#: ``script`` — one whole script, run once
REPLIES = ("tool_calls", "staged_scripts", "script")


@dataclass(frozen=True)
class Scaffold:
    name: str
    run: Callable[..., Transcript]
    turns: int  #: the turn budget when none is given
    turn: str  #: what one turn of the budget is, in words (help texts)
    reply: str  #: what the policy writes (one of :data:`REPLIES`)

    def __post_init__(self) -> None:
        if self.reply not in REPLIES:
            raise ValueError(f"scaffold {self.name}: reply must be one of {', '.join(REPLIES)} (got {self.reply!r})")


SCAFFOLDS: dict[str, Scaffold] = {s.name: s for s in (
    Scaffold("react", react.run, 15, "model calls", "tool_calls"),
    Scaffold("aide", aide.run, 5, "tree nodes", "staged_scripts"),
    Scaffold("oneshot", oneshot.run, 1, "one script", "script"),
)}


def get_scaffold(name: str) -> Scaffold:
    if name not in SCAFFOLDS:
        raise SandmleError(f"unknown scaffold {name!r}; expected one of {', '.join(SCAFFOLDS)}")
    return SCAFFOLDS[name]


def turn_budgets() -> str:
    """``react 15 (model calls), aide 5 (tree nodes), ...``: the default budgets, for help texts."""
    return ", ".join(f"{s.name} {s.turns} ({s.turn})" for s in SCAFFOLDS.values())


__all__ = ["REPLIES", "SCAFFOLDS", "Scaffold", "Transcript", "get_scaffold", "turn_budgets"]
