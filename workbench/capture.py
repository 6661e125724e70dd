"""Plain-text capture of what a running app shows (for the README's text captures and for debugging)."""

from __future__ import annotations


def screen_text(app) -> str:
    """The active screen as text, one line per terminal row (trailing spaces removed)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)
