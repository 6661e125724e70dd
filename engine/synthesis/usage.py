"""Tokens and cost of synthesis, from the stored attempts: per role, in all, and per verified environment."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens")


def usage_summary(attempts: Sequence[Mapping[str, Any]], verified: int | None = None) -> dict[str, Any]:
    """``attempts``: stored attempt rows (their ``role`` and ``usage``); ``verified``: how many environments they
    verified (adds the cost and tokens per verified environment)."""
    by_role: dict[str, dict[str, Any]] = {}
    for a in attempts:
        usage = a.get("usage") or {}
        if not usage.get("provider"):
            continue
        row = by_role.setdefault(a["role"], {"calls": 0, **{k: 0 for k in TOKEN_KEYS}, "cost_usd": 0.0})
        row["calls"] += 1
        for k in TOKEN_KEYS:
            row[k] += int(usage.get(k, 0))
        row["cost_usd"] += float(usage.get("cost_usd", 0.0))
    for row in by_role.values():
        row["cost_usd"] = round(row["cost_usd"], 6)
    tokens = sum(r[k] for r in by_role.values() for k in TOKEN_KEYS)
    cost = round(sum(r["cost_usd"] for r in by_role.values()), 6)
    out: dict[str, Any] = {"calls": sum(r["calls"] for r in by_role.values()), "tokens": tokens, "cost_usd": cost,
                           "by_role": dict(sorted(by_role.items()))}
    if verified is not None:
        n = verified
        out["verified"] = n
        out["cost_per_verified_usd"] = round(cost / n, 6) if n else None
        out["tokens_per_verified"] = round(tokens / n) if n else None
    return out
