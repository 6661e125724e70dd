"""Turning stored turns into the exact token ids the hf policy would have seen, for trajectories that were not
produced by a local model (scripted or API teachers). Trajectories of the hf policy keep their own token ids."""

from __future__ import annotations

from typing import Any, Sequence

from store.trajectories import Turn

from ..agents.policies.chat import ChatFormat
from ..agents.scaffolds import aide
from .objective import TokenSequence, build_sequence


def render_turns(tokenizer: Any, turns: Sequence[Turn]) -> list[list[int]]:
    """One list of token ids per turn, rendered the way the hf policy renders messages (its ``ChatFormat``: the
    generation prompt belongs to the message before an assistant turn, an assistant message is its text + end)."""
    if all(t.token_ids for t in turns):
        return [list(t.token_ids or []) for t in turns]

    copies = [Turn(role=t.role, text=t.text, token_ids=list(t.token_ids) if t.token_ids else None) for t in turns]
    ChatFormat(tokenizer).fill(copies)  # fills the copies' token ids: the stored turns stay as they are
    return [list(c.token_ids or []) for c in copies]


def sft_example(tokenizer: Any, turns: Sequence[Turn], max_len: int | None = None) -> dict[str, list[int]]:
    """``input_ids`` and ``assistant_masks`` (1 on assistant tokens: the only ones with loss)."""
    ids: list[int] = []
    mask: list[int] = []
    for t, toks in zip(turns, render_turns(tokenizer, turns)):
        ids.extend(toks)
        mask.extend([1 if t.role == "assistant" else 0] * len(toks))
    if max_len is not None:
        ids, mask = ids[:max_len], mask[:max_len]
    return {"input_ids": ids, "assistant_masks": mask}


def reply_views(scaffold: str, turns: Sequence[Turn]) -> list[list[Turn]]:
    """The sequences a scaffold's policy read and wrote: react and oneshot replies read the whole episode so far
    (one sequence), each aide reply only the system prompt and its step's prompt (one sequence per step)."""
    if scaffold == "aide":
        return aide.reply_contexts(turns)
    return [list(turns)]


def reply_sequences(scaffold: str, turns: Sequence[Turn]) -> list[TokenSequence]:
    """The token sequences GRPO trains one trajectory on: one per :func:`reply_views` view, each reply under the
    exact context it was sampled from (react, oneshot: the whole episode; aide: the system prompt and the step's
    prompt), so the trainer's log-probs are those of the policy that sampled it and every model token is trained
    once. ``ValueError`` when a turn has no token ids."""
    return [build_sequence(view) for view in reply_views(scaffold, turns)]
