"""The top-p nucleus, one rule for every party that needs it: the hf sampler draws from it, the GRPO trainer computes
its log-probs under it (so a token's importance ratio π_trainer / π_sampler compares like with like), and vLLM's
``processed_logprobs`` apply the same rule (its ``apply_top_k_top_p``).

The rule is transformers' ``TopPLogitsWarper``: sort the (temperature-scaled) logits ascending and drop the least
likely tokens while their cumulative probability stays <= 1 - top_p; the most likely token always stays. The
log-prob of a kept token is then its log-softmax over the kept tokens only."""

from __future__ import annotations

from typing import Any


def nucleus_drop(scaled: Any, top_p: Any) -> Any:
    """A bool tensor shaped like ``scaled`` [..., V]: True where a token lies outside the top-p nucleus of its row.
    ``top_p`` is a float or a tensor of ``scaled.shape[:-1]`` (one value per row); computed without gradients."""
    import torch  # heavy optional dependency

    with torch.no_grad():
        if not isinstance(top_p, torch.Tensor):
            top_p = torch.full(scaled.shape[:-1], float(top_p), dtype=torch.float32, device=scaled.device)
        ascending, order = torch.sort(scaled.detach(), dim=-1)
        drop = ascending.softmax(-1).cumsum(-1) <= (1.0 - top_p.to(scaled.device)).unsqueeze(-1)
        drop[..., -1] = False
        return torch.zeros_like(drop).scatter(-1, order, drop)


def nucleus_logits(scaled: Any, top_p: float, keep: Any | None = None) -> Any:
    """``scaled`` with every token outside the top-p nucleus set to -inf (``top_p`` >= 1: unchanged). ``keep``
    (token ids, ``scaled.shape[:-1]``) stay in their row whatever the rule says: the trainer keeps the token that
    was sampled, so a token another engine's rounding put just inside its nucleus gets a finite log-prob here (its
    importance weight is then truncated, not NaN)."""
    if top_p >= 1.0:
        return scaled
    drop = nucleus_drop(scaled, top_p)
    if keep is not None:
        drop = drop.scatter(-1, keep.unsqueeze(-1), False)
    return scaled.masked_fill(drop, float("-inf"))
