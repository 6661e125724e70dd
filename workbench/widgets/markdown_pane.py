"""A light Markdown pane: Rich renders the whole document into one widget (Textual's Markdown widget mounts a
widget per block — hundreds for a long seed description — which made screens slow to open)."""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from textual.containers import VerticalScroll
from textual.widgets import Static


class MarkdownPane(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    MarkdownPane { padding: 0 1; }
    MarkdownPane > Static { width: 1fr; }
    """

    def __init__(self, text: str = "", **kwargs):
        super().__init__(**kwargs)
        self.text = text

    def compose(self):
        yield Static(RichMarkdown(self.text, code_theme="ansi_dark"), id="markdown-body")

    def update(self, text: str) -> None:
        """Show ``text`` (a no-op when it is what is shown: a periodic reload keeps the reader's place)."""
        if text == self.text and self.is_mounted:
            return
        self.text = text
        self.query_one("#markdown-body", Static).update(RichMarkdown(text, code_theme="ansi_dark"))
        self.scroll_home(animate=False)
