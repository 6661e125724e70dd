"""Scaffolds: how a policy acts in an environment. Each is a function
``run(env: MLEEnv, policy, *, max_turns, rng_seed) -> Transcript`` over the shared env interface."""

from __future__ import annotations

from typing import Callable

from ...errors import SandmleError
from . import aide, oneshot, react
from .base import Transcript

SCAFFOLDS: dict[str, Callable[..., Transcript]] = {"react": react.run, "aide": aide.run, "oneshot": oneshot.run}


def get_scaffold(name: str) -> Callable[..., Transcript]:
    if name not in SCAFFOLDS:
        raise SandmleError(f"unknown scaffold {name!r}; expected one of {', '.join(SCAFFOLDS)}")
    return SCAFFOLDS[name]


__all__ = ["SCAFFOLDS", "Transcript", "get_scaffold"]
