"""The scaffold options of the commands that run episodes (`rollout`, `eval`): ``--scaffold`` (one of
:data:`engine.agents.scaffolds.SCAFFOLDS`) and ``--max-turns`` (default: the scaffold's own budget)."""

from __future__ import annotations

from typing import Callable, TypeVar

import click

from engine.agents.scaffolds import SCAFFOLDS, turn_budgets

from .common import NameChoice

F = TypeVar("F", bound=Callable[..., object])


def scaffold_options(fn: F) -> F:
    fn = click.option("--max-turns", type=click.IntRange(min=1),
                      help=f"Turn budget per episode. Default per scaffold: {turn_budgets()}.")(fn)
    return click.option("--scaffold", default="react", show_default=True, type=NameChoice(SCAFFOLDS),
                        help="How the policy acts.")(fn)
