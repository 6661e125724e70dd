"""Themes are ``.tcss`` files in ``themes/``: each holds a palette as ``$name: value;`` lines, read here into a
Textual :class:`~textual.theme.Theme`. The chosen theme is remembered in the config file (``[workbench] theme``)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.theme import Theme

from engine.config import load_settings, set_value
from engine.errors import SandmleError

THEMES_DIR = Path(__file__).parent / "shipped_themes"  # links to the top-level themes/; package data in a wheel
DEFAULT_THEME = "sandmle-dark"
_VAR = re.compile(r"^\s*\$([a-z][a-z0-9-]*)\s*:\s*([^;]+);", re.MULTILINE)
_FIELDS = ("primary", "secondary", "warning", "error", "success", "accent", "foreground", "background",
           "surface", "panel", "boost")


def load_theme(path: Path) -> Theme:
    """Read one theme file's palette into a Theme (the name is the file's stem)."""
    values = {k: v.strip() for k, v in _VAR.findall(path.read_text(encoding="utf-8"))}
    if "primary" not in values:
        raise ValueError(f"{path}: a theme needs at least `$primary: <colour>;`")
    known = {k: values[k] for k in _FIELDS if k in values}
    extra = {k: v for k, v in values.items() if k not in _FIELDS and k != "dark"}
    return Theme(name=path.stem, dark=values.get("dark", "true").lower() != "false", variables=extra, **known)


def shipped_themes(folder: Path = THEMES_DIR) -> list[Theme]:
    """Every theme file in ``themes/`` (``base.tcss`` is layout, not a theme)."""
    return [load_theme(p) for p in sorted(folder.glob("*.tcss")) if p.stem != "base"]


def saved_theme() -> str:
    """The theme named in the config file, or the default when the file is missing or unreadable."""
    try:
        return load_settings().workbench.theme
    except SandmleError:
        return DEFAULT_THEME


def save_theme(name: str) -> None:
    """Remember the theme in the config file (``[workbench] theme``)."""
    set_value("workbench", "theme", name)
