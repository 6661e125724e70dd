"""The house rules issue #31 set, held by a test so they stay true: no product module (engine/, workbench/, store/)
over 600 lines and none of the exploit audit's over 450 (a module that outgrows them holds several concerns: split
it), the generator templates aside (programs shipped as package data, copied into every environment, not modules);
and no test that skips because something "has not landed" (such a skip hides a regression: it fails instead)."""

from __future__ import annotations

import re
import tomllib

from conftest import ROOT

PRODUCT = ("engine", "workbench", "store")
MAX_LINES = 600
AUDIT = ROOT / "engine" / "grading" / "audit"
MAX_AUDIT_LINES = 450
#: package data that is Python to read, not a module to import: the templates the Data engineer fills in
TEMPLATES = ROOT / "engine" / "synthesis" / "templates"


def _lines(path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _modules():
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.parent != TEMPLATES:
                yield path


def test_the_templates_set_aside_are_package_data_not_modules():
    """What the size rule leaves out is only the templates: shipped as package data, with no __init__.py (never
    imported as a package)."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "templates/*.py" in data["engine.synthesis"]
    assert sorted(p.name for p in TEMPLATES.iterdir()) == ["generator.py", "grounded.py"]
    assert not (TEMPLATES / "__init__.py").exists()


def test_no_product_module_is_over_600_lines():
    sizes = {p.relative_to(ROOT).as_posix(): _lines(p) for p in _modules()}
    assert len(sizes) > 100 and "engine/grading/audit/run.py" in sizes
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_no_audit_module_is_over_450_lines():
    sizes = {p.name: _lines(p) for p in sorted(AUDIT.glob("*.py"))}
    assert {"run.py", "sources.py", "view.py"} <= set(sizes)
    assert {p: n for p, n in sizes.items() if n > MAX_AUDIT_LINES} == {}


def test_no_test_skips_because_something_has_not_landed():
    pattern = re.compile(r"(has|have)\s+not\s+(yet\s+)?landed|not\s+landed\s+yet", re.I)
    here = ROOT / "tests" / "test_house.py"
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "tests").rglob("*.py")) if p != here
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == []
