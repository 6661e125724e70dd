"""Imports run one way: workbench → engine → store. The engine never pulls in the TUI."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

from conftest import ROOT


def _modules(package: str) -> list[str]:
    pkg = __import__(package)
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
        names.append(info.name)
    return names


def _loaded_after_importing(mods: list[str], roots: tuple[str, ...]) -> list[str]:
    """The modules under ``roots`` that a fresh interpreter holds after importing ``mods``."""
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        f"print(','.join(sorted(k for k in sys.modules if k.split('.')[0] in {roots!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return [m for m in out.stdout.strip().split(",") if m]


def test_engine_and_every_submodule_import_without_textual():
    mods = _modules("engine")
    assert "engine.seeds.load" in mods and "engine.grading.metrics" in mods
    assert _loaded_after_importing(mods, ("textual", "workbench")) == []


def test_engine_outside_training_imports_no_torch():
    """torch is a heavy optional dependency: the engine loads it only to train, sample or load a model."""
    mods = ["engine", "engine.seeds.load", "engine.synthesis.pipeline", "engine.eval.run", "engine.eval.select",
            "engine.agents.rollout", "engine.agents.policies", "engine.sandbox", "engine.executors",
            "engine.models.loading"]
    assert _loaded_after_importing(mods, ("torch", "transformers", "trl", "peft")) == []


def test_store_imports_neither_engine_nor_workbench():
    assert _loaded_after_importing(_modules("store"), ("engine", "workbench", "textual")) == []


def test_no_sql_outside_store():
    """The store owns SQL: no engine or workbench module talks to sqlite directly."""
    offenders = []
    for folder in ("engine", "workbench"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if "import sqlite3" in text or "sqlite_utils" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
