"""Short renderings shared by the screens and widgets: times, durations, money and ids that fit a column."""

from __future__ import annotations

import datetime as _dt


def fmt_time(iso: str | None) -> str:
    """'2026-11-30T05:01:02.123+00:00' → '11-30 05:01'."""
    return iso[5:16].replace("T", " ") if iso else ""


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds // 60:.0f}m{seconds % 60:02.0f}s"
    return f"{seconds // 3600:.0f}h{(seconds % 3600) // 60:02.0f}m"


def fmt_cost(usd: float | None) -> str:
    """'' when nothing was paid (no API call), else dollars with cents (or a tenth of a cent below $0.10)."""
    if not usd:
        return ""
    return f"${usd:.3f}" if usd < 0.1 else f"${usd:.2f}"


def wall_seconds(run: dict) -> float | None:
    """How long a run has taken: ended − started, or up to now while it runs (None before it started)."""
    start = run.get("started_at") or run.get("created_at")
    if not start:
        return None
    end = run.get("ended_at")
    t1 = _dt.datetime.fromisoformat(end) if end else _dt.datetime.now(_dt.timezone.utc)
    return max(0.0, (t1 - _dt.datetime.fromisoformat(start)).total_seconds())


def short_id(text: str | None, width: int) -> str:
    """``text`` in at most ``width`` characters, cut in the middle so that the end survives: synthesized ids
    differ in their last characters (``tabular-binary-manufacturing-1a2b3c4d`` → ``tabular-bina…1a2b3c4d``)."""
    text = text or ""
    if len(text) <= width:
        return text
    tail = min(len(text) - 1, max(width // 2, width - 14))
    head = width - 1 - tail
    return (text[:head] if head > 0 else "") + "…" + text[-tail:]


def clip(text: str | None, width: int) -> str:
    """``text`` in at most ``width`` characters, cut at the end."""
    text = text or ""
    return text if len(text) <= width else text[: width - 1] + "…"
