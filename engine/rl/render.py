"""Turning stored turns into the exact token ids the hf policy would have seen, for trajectories that were not
produced by a local model (scripted or API teachers). Trajectories of the hf policy keep their own token ids."""

from __future__ import annotations

from typing import Any, Sequence


def _get(turn: Any, key: str) -> Any:
    return turn.get(key) if isinstance(turn, dict) else getattr(turn, key, None)


def render_turns(tokenizer: Any, turns: Sequence[Any]) -> list[list[int]]:
    """One list of token ids per turn, rendered the way the hf policy renders messages."""
    if all(_get(t, "token_ids") for t in turns):
        return [list(_get(t, "token_ids")) for t in turns]
    from ..agents.policies.hf import render_message

    out = []
    for t in turns:
        ids = _get(t, "token_ids")
        out.append(list(ids) if ids else list(render_message(tokenizer, _get(t, "role"), _get(t, "text") or "")))
    return out


def sft_example(tokenizer: Any, turns: Sequence[Any], max_len: int | None = None) -> dict[str, list[int]]:
    """``input_ids`` and ``assistant_masks`` (1 on assistant tokens: the only ones with loss)."""
    ids: list[int] = []
    mask: list[int] = []
    for t, toks in zip(turns, render_turns(tokenizer, turns)):
        ids.extend(toks)
        mask.extend([1 if _get(t, "role") == "assistant" else 0] * len(toks))
    if max_len is not None:
        ids, mask = ids[:max_len], mask[:max_len]
    return {"input_ids": ids, "assistant_masks": mask}
