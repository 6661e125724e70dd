"""The sandbox options of every command that runs agent or generator code (`sandbox run`, `rollout`, `eval`,
`synth`, `train grpo`). Options left out keep the `[sandbox]` settings."""

from __future__ import annotations

from typing import Callable, TypeVar

import click

from engine.backends import SANDBOX_BACKENDS
from engine.config import ISOLATIONS

from .common import POSITIVE_S, NameChoice

F = TypeVar("F", bound=Callable[..., object])


def sandbox_options(*, backend_alias: str | None = None, timeout_alias: str | None = None,
                    timeout: bool = True) -> Callable[[F], F]:
    """``--sandbox-backend``, ``--isolation``, ``--memory-mb``, ``--max-procs``, ``--timeout`` (the aliases keep older names; no
    ``--timeout`` where the command's own config has the step's time limit: `train grpo`)."""

    def deco(fn: F) -> F:
        backend_names = ["--sandbox-backend", *([backend_alias] if backend_alias else [])]
        timeout_names = ["--timeout", *([timeout_alias] if timeout_alias else [])]
        options = [
            click.option(*backend_names, "sandbox_backend", type=NameChoice(SANDBOX_BACKENDS),
                         help="Where untrusted code runs [default: [sandbox] backend]."),
            click.option("--isolation", type=click.Choice(ISOLATIONS),
                         help="How the local backend confines runs: auto (the jail, else bubblewrap, else refused), "
                              "jail, bwrap, or none (UNISOLATED: runs can read this user's files, answers "
                              "included) [default: [sandbox] isolation]."),
            click.option("--memory-mb", type=click.IntRange(min=1024),
                         help="Memory limit of each sandboxed run in MB, >= 1024 (pandas and sklearn need it) "
                              "[default: [sandbox] memory_mb]."),
            click.option("--max-procs", type=click.IntRange(min=1),
                         help="Process and thread limit of each sandboxed run [default: [sandbox] max_procs]."),
        ]
        if timeout:
            options.append(click.option(*timeout_names, "timeout_s", type=POSITIVE_S,
                                        help="Wall-time limit of each sandboxed run (each code step), seconds "
                                             "[default: [sandbox] timeout_s]."))
        for option in reversed(options):
            fn = option(fn)
        return fn

    return deco
