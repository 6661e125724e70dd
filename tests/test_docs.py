"""The README fits a newcomer's five minutes and every page it and docs/ link to exists."""

from __future__ import annotations

import re

from tests.conftest import ROOT

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
