"""Turning stored turns into the exact token ids the hf policy would have seen, for trajectories that were not
produced by a local model (scripted or API teachers). Trajectories of the hf policy keep their own token ids."""

from __future__ import annotations

from typing import Any, Sequence

from ..agents.policies.chat import ChatFormat
from ..agents.policy import Message


def _get(turn: Any, key: str) -> Any:
    return turn.get(key) if isinstance(turn, dict) else getattr(turn, key, None)


def render_turns(tokenizer: Any, turns: Sequence[Any]) -> list[list[int]]:
    """One list of token ids per turn, rendered the way the hf policy renders messages (its ``ChatFormat``: the
    generation prompt belongs to the message before an assistant turn, an assistant message is its text + end)."""
    if all(_get(t, "token_ids") for t in turns):
        return [list(_get(t, "token_ids")) for t in turns]

    msgs = [Message(role=_get(t, "role"), content=_get(t, "text") or "",
                    token_ids=list(_get(t, "token_ids")) if _get(t, "token_ids") else None) for t in turns]
    ChatFormat(tokenizer).fill(msgs)
    return [list(m.token_ids or []) for m in msgs]


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
