"""The backends a setting names: sandbox backends (``[sandbox] backend``), executors (``[executor] kind``) and
synthesis backends (``[synthesis] backend``).

One list each, and everything else is derived from it: the settings' validation (:mod:`engine.config`), the
training config's, the CLI's choices and help, the workbench's forms, and the factories (``engine.sandbox.get_backend``,
``engine.executors.get_executor``, ``engine.synthesis.backends.get_synthesis_backend``). An entry names its class by ``"module:Class"`` and the factory loads it when it
builds one (as SWE-ReX's backend configs and MLE-bench's task registry name code): the settings sit below the
packages that implement the backends, so they can only name them. Adding a backend is its module plus one entry.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass(frozen=True)
class Backend:
    name: str
    target: str  #: ``"package.module:Class"``
    help: str  #: what it is, in a few words (the CLI's help and the settings' description say it)

    def load(self) -> Any:
        """The class this entry names (its module imported now)."""
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


class Registry:
    """The backends of one extension point, in the order the help lists them."""

    def __init__(self, what: str, *entries: Backend):
        self.what = what
        self.entries: dict[str, Backend] = {e.name: e for e in entries}

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.entries))

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def unknown(self, name: object) -> str:
        """The one line for a name that is not here."""
        return f"unknown {self.what} {name!r}; expected {', '.join(self.entries)}"

    def check(self, name: str) -> str:
        """``name`` when it is one of the entries, else ``ValueError`` (the settings' and configs' validators)."""
        if name not in self.entries:
            raise ValueError(self.unknown(name))
        return name

    def get(self, name: str) -> Backend:
        """The entry of ``name``; ``KeyError`` with :meth:`unknown`'s line when there is none."""
        if name not in self.entries:
            raise KeyError(self.unknown(name))
        return self.entries[name]

    def described(self) -> str:
        """``a (what a is), b (…) or c (…)``: the entries for help texts."""
        parts = [f"{e.name} ({e.help})" for e in self.entries.values()]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


SANDBOX_BACKENDS = Registry(
    "sandbox backend",
    Backend("local", "engine.sandbox.local:LocalBackend", "subprocesses in a jail on this machine"),
    Backend("docker", "engine.sandbox.docker:DockerBackend", "a container per workspace"),
)

EXECUTORS = Registry(
    "executor",
    Backend("local", "engine.executors.local:LocalExecutor", "threads of one process"),
    Backend("process", "engine.executors.process:ProcessExecutor", "spawned processes"),
    Backend("ray", "engine.executors.ray:RayExecutor", "a local Ray, or the cluster at ray_address"),
)

#: who answers the synthesis roles; each entry names a function ``build(settings: Settings) -> SynthesisBackend``
SYNTHESIS_BACKENDS = Registry(
    "synthesis backend",
    Backend("grounded", "engine.synthesis.backends.grounded:build",
            "real datasets of installed packages, offline, no LLM (needs the data extra)"),
    Backend("procedural", "engine.synthesis.backends.procedural:build", "templates, offline, no LLM"),
    Backend("anthropic", "engine.synthesis.backends.chat:anthropic", "Claude through the official SDK"),
    Backend("openai", "engine.synthesis.backends.chat:openai", "any OpenAI-compatible endpoint"),
)
