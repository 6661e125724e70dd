"""What the screens say about a run beyond its row: what an API cost it, and which split a launch will train on."""

from __future__ import annotations

from typing import Any

from engine.envs.layout import REAL_SPLIT
from engine.llm.base import anthropic_price, cost_usd
from store import Store


def run_cost(store: Store, run: dict[str, Any]) -> float:
    """USD spent on LLM APIs by a run: synthesis attempts and the episodes of ``anthropic:`` / ``openai:`` policies
    record their cost (``engine.llm``); an older Claude episode with tokens but no cost is priced by the Anthropic
    price table. 0 where no API was used."""
    if run["kind"] == "synthesis":
        return store.envs.run_cost(run["id"])
    if not str((run.get("config") or {}).get("policy", "")).startswith(("anthropic:", "openai:")):
        return 0.0  # a local model: nothing paid (and no need to read every episode)
    total = 0.0
    for t in store.trajectories.list(run_id=run["id"]):
        usage = t.state.get("usage")
        if not isinstance(usage, dict):
            continue
        if "cost_usd" in usage or not t.policy.startswith("anthropic:"):
            total += float(usage.get("cost_usd") or 0)
        else:
            price = anthropic_price(t.policy.split(":", 1)[1])
            total += cost_usd(price, input_tokens=int(usage.get("input_tokens") or 0),
                              output_tokens=int(usage.get("output_tokens") or 0))
    return total


def split_size(store: Store, split: str) -> int:
    """How many verified environments a training launch on ``split`` (train, heldout or all) would use: ``all`` is
    every split but the real competitions, which training never selects."""
    if split == "all":
        return store.envs.count(status="verified", exclude_split=REAL_SPLIT)
    return store.envs.count(status="verified", split=split)
