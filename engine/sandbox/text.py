"""Text helpers for observations and logs."""

from __future__ import annotations


def head_tail(text: str, max_chars: int) -> str:
    """Keep the head and the tail of a long text with a marker of what was cut."""
    if len(text) <= max_chars:
        return text
    half = max(max_chars // 2 - 40, 1)
    cut = len(text) - 2 * half
    return f"{text[:half]}\n... [{cut} characters cut] ...\n{text[-half:]}"
