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


def test_engine_and_every_submodule_import_without_textual():
    mods = _modules("engine")
    assert "engine.seeds.load" in mods and "engine.grading.metrics" in mods
    code = (
        "import importlib, sys\n"
        f"mods = {mods!r}\n"
        "for m in mods: importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.') or k.startswith('workbench'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"engine imported the TUI: {out.stdout}"


def test_engine_outside_training_imports_no_torch():
    """torch is a heavy optional dependency: the engine loads it only to train, sample or load a model."""
    mods = ["engine", "engine.seeds.load", "engine.synthesis.pipeline", "engine.eval.run", "engine.eval.select",
            "engine.agents.rollout", "engine.agents.policies", "engine.sandbox", "engine.executors",
            "engine.models.loading"]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "print(','.join(sorted(k for k in ('torch', 'transformers', 'trl', 'peft') if k in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_store_imports_neither_engine_nor_workbench():
    mods = _modules("store")
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}: importlib.import_module(m)\n"
        "print(','.join(sorted(k for k in sys.modules if k.split('.')[0] in ('engine', 'workbench', 'textual'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_no_sql_outside_store():
    """The store owns SQL: no engine or workbench module talks to sqlite directly."""
    offenders = []
    for folder in ("engine", "workbench"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text()
            if "import sqlite3" in text or "sqlite_utils" in text:
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
