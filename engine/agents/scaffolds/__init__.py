"""Scaffolds: how a policy acts in an environment. Each is a function
``run(env: MLEEnv, policy, *, max_turns, rng_seed) -> Transcript`` over the shared env interface."""

from __future__ import annotations

from typing import Callable

from ...errors import SandmleError
from .base import Transcript

SCAFFOLDS = ("react", "aide", "oneshot")


def get_scaffold(name: str) -> Callable[..., Transcript]:
    if name == "react":
        from .react import run
    elif name == "aide":
        from .aide import run
    elif name == "oneshot":
        from .oneshot import run
    else:
        raise SandmleError(f"unknown scaffold {name!r}; expected one of {', '.join(SCAFFOLDS)}")
    return run


__all__ = ["SCAFFOLDS", "Transcript", "get_scaffold"]
