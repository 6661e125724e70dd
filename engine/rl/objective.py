"""The GRPO arithmetic as pure torch functions (no model, no store): group-normalized advantages per
trajectory, sequence building with observation masks, per-token log-probs, and the clipped token-mean loss with
clip-higher and an optional k3 KL term. Kept apart so each piece is tested on hand-built numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch.utils.checkpoint import checkpoint

from store.trajectories import Turn

from ..inference.nucleus import nucleus_logits


# ---------------------------------------------------------------------------------------------- advantages
@dataclass
class GroupStats:
    advantages: list[float]          # one per trajectory (0 for masked ones)
    weights: list[float]             # loss weight per trajectory: 0 = not trained on
    equal_groups: int = 0            # groups whose (unmasked) rewards were all equal
    masked: int = 0                  # trajectories masked because they timed out
    groups: int = 0


def group_advantages(
    rewards: Sequence[float], group_ids: Sequence[str], *, masked: Sequence[bool] | None = None,
    scale: bool = True, equal_group: str = "skip", equal_weight: float = 0.1, eps: float = 1e-6,
) -> GroupStats:
    """Advantage of trajectory i = (r_i - mean of its group) / (std of its group + eps) (``scale=False``: no
    division, as Dr. GRPO). Masked trajectories (timed out) take no part in the group's statistics and get
    weight 0: they are neither punished nor rewarded. A group whose remaining rewards are all equal (or that
    has fewer than two) carries no signal: weight 0 (``skip``) or ``equal_weight`` (``downweight``: its advantage is
    still 0, so it adds no policy gradient; its tokens only enlarge the token mean's normalizer, which shrinks the
    step of the other groups, and take part in the KL term when there is one)."""
    n = len(rewards)
    if len(group_ids) != n:
        raise ValueError("rewards and group_ids differ in length")
    masked = list(masked) if masked is not None else [False] * n
    adv = [0.0] * n
    weights = [0.0] * n
    order: dict[Any, list[int]] = {}
    for i, g in enumerate(group_ids):
        order.setdefault(g, []).append(i)
    stats = GroupStats(adv, weights, masked=sum(bool(m) for m in masked), groups=len(order))
    for members in order.values():
        live = [i for i in members if not masked[i]]
        vals = [float(rewards[i]) for i in live]
        if len(vals) < 2 or max(vals) - min(vals) <= eps:
            stats.equal_groups += 1
            w = 0.0 if equal_group == "skip" else float(equal_weight)
            for i in live:
                weights[i] = w
            continue
        mean = sum(vals) / len(vals)
        std = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1))
        for i in live:
            a = float(rewards[i]) - mean
            adv[i] = a / (std + eps) if scale else a
            weights[i] = 1.0
    return stats


# ---------------------------------------------------------------------------------------------- sequences
@dataclass
class TokenSequence:
    """One trajectory as the model saw it: prompt then completion, with a mask over the completion."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]                     # 1 = model-generated token (trained), 0 = observation (masked)
    old_logprobs: list[float] = field(default_factory=list)   # per completion token; NaN where unknown

    @property
    def input_ids(self) -> list[int]:
        return self.prompt_ids + self.completion_ids

    @property
    def model_tokens(self) -> int:
        return int(sum(self.env_mask))


def build_sequence(turns: Sequence[Turn]) -> TokenSequence:
    """prompt = the token ids of the leading system/user messages; completion = every later message's token ids
    up to the last assistant message (what follows it — the last observation — the model never read: it would
    only cost forward compute and count toward ``max_seq_len``); env_mask = 1 on assistant tokens and 0 on
    tool/user observation tokens; old log-probs = the sampler's, from the assistant messages (NaN where a message
    has none: no importance correction for those tokens). Never cut: the trainer masks a sequence longer than its
    ``max_seq_len`` as a whole."""
    prompt: list[int] = []
    completion: list[int] = []
    mask: list[int] = []
    old: list[float] = []
    in_prompt = True
    last = max((i for i, t in enumerate(turns) if t.role == "assistant"), default=-1)
    for k, t in enumerate(turns):
        if k > last and not (in_prompt and t.role in ("system", "user")):
            break  # a trailing observation (or anything after the last reply): never read by the model
        role = t.role
        ids = t.token_ids
        if ids is None:
            raise ValueError(f"a {role} turn has no token_ids: this trajectory was not produced by a local model")
        ids = list(ids)
        if in_prompt and role in ("system", "user"):
            prompt.extend(ids)
            continue
        in_prompt = False
        completion.extend(ids)
        if role == "assistant":
            mask.extend([1] * len(ids))
            lps = t.logprobs
            if lps is not None and len(lps) == len(ids):
                old.extend(float(x) for x in lps)
            elif lps is not None and 0 < len(lps) < len(ids):
                # logprobs cover the generated tokens; any trailing tokens (e.g. an appended end marker) are not
                old.extend([float(x) for x in lps] + [math.nan] * (len(ids) - len(lps)))
            else:
                old.extend([math.nan] * len(ids))
        else:
            mask.extend([0] * len(ids))
            old.extend([0.0] * len(ids))
    return TokenSequence(prompt, completion, mask, old)


@dataclass
class Batch:
    input_ids: torch.Tensor        # [B, T] right-padded
    attention_mask: torch.Tensor   # [B, T]
    loss_mask: torch.Tensor        # [B, T-1] float: 1 where token t+1 is a model token of the completion
    old_logprobs: torch.Tensor     # [B, T-1] (NaN where unknown)
    advantages: torch.Tensor       # [B]
    weights: torch.Tensor          # [B]


def collate(seqs: Sequence[TokenSequence], advantages: Sequence[float], weights: Sequence[float],
            pad_id: int = 0) -> Batch:
    """Right-pad sequences; the masks are shifted to line up with next-token log-probs (position t predicts t+1)."""
    T = max(len(s.input_ids) for s in seqs)
    B = len(seqs)
    ids = torch.full((B, T), pad_id, dtype=torch.long)
    att = torch.zeros((B, T), dtype=torch.long)
    mask = torch.zeros((B, T), dtype=torch.float32)
    old = torch.zeros((B, T), dtype=torch.float32)
    for b, s in enumerate(seqs):
        n, p = len(s.input_ids), len(s.prompt_ids)
        ids[b, :n] = torch.tensor(s.input_ids, dtype=torch.long)
        att[b, :n] = 1
        mask[b, p:n] = torch.tensor(s.env_mask, dtype=torch.float32)
        old[b, p:n] = torch.tensor(s.old_logprobs, dtype=torch.float32)
    return Batch(ids, att, mask[:, 1:], old[:, 1:], torch.tensor(list(advantages), dtype=torch.float32),
                 torch.tensor(list(weights), dtype=torch.float32))


# ---------------------------------------------------------------------------------------------- log-probs
def split_lm(model: Any) -> tuple[Any, Any]:
    """(backbone, LM head) of a transformers causal LM, PEFT-wrapped or not (LoRA layers live inside both)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    if getattr(base.config, "final_logit_softcapping", None):
        raise ValueError("models with logit soft-capping are not supported by the chunked log-probs")
    return getattr(base, base.base_model_prefix), base.get_output_embeddings()


def _chunk_logprobs(head: Any, temperature: float, top_p: float, hidden: torch.Tensor,
                    targets: torch.Tensor) -> torch.Tensor:
    logits = head(hidden).float()
    if temperature != 1.0:
        logits = logits / temperature
    logits = nucleus_logits(logits, top_p, keep=targets)
    return logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - logits.logsumexp(-1)


def sequence_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                      temperature: float = 1.0, chunk: int = 1024, top_p: float = 1.0) -> torch.Tensor:
    """log p(token t+1 | tokens ≤ t) [B, T-1] (float32) under the distribution the sampler draws from: the logits
    divided by ``temperature``, cut to the ``top_p`` nucleus (:mod:`engine.inference.nucleus`, the sampler's own
    rule; the token itself always stays in), renormalized. Never holds full-vocabulary logits for the whole
    sequence: the backbone's hidden states go through the LM head and the log-softmax ``chunk`` positions at a
    time, and with gradients on each chunk is recomputed in the backward pass (activation checkpointing), so what
    stays alive per chunk is its hidden states, not its [B, chunk, V] logits (``top_p`` < 1 adds a sort of each
    chunk's logits while it is computed)."""
    backbone, head = split_lm(model)
    hidden = backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    hidden, targets = hidden[:, :-1], input_ids[:, 1:]
    parts = []
    for s in range(0, hidden.shape[1], max(1, int(chunk))):
        h, t = hidden[:, s:s + chunk], targets[:, s:s + chunk]
        if torch.is_grad_enabled():
            parts.append(checkpoint(_chunk_logprobs, head, temperature, top_p, h, t, use_reentrant=False))
        else:
            parts.append(_chunk_logprobs(head, temperature, top_p, h, t))
    return torch.cat(parts, dim=1)


# ---------------------------------------------------------------------------------------------- sampler mismatch
@dataclass
class Mismatch:
    """The engine/trainer log-prob mismatch of one micro-batch, and its truncated importance-sampling weights."""

    weights: torch.Tensor  # [B, T] min(π_trainer / π_sampler, cap), 1 where the sampler's log-prob is unknown
    abs_diff: float        # Σ |log π_trainer − log π_sampler| over model tokens with a known sampler log-prob
    kl: float              # Σ k3 estimate of KL(π_sampler ‖ π_trainer) over the same tokens
    capped: int            # tokens whose weight hit the cap
    tokens: int            # model tokens with a known sampler log-prob


def tis_weights(trainer_logprobs: torch.Tensor, sampler_logprobs: torch.Tensor, loss_mask: torch.Tensor,
                cap: float) -> Mismatch:
    """Truncated importance sampling: the tokens were drawn by the sampler (another engine, or other numerics),
    the loss is the trainer's, so each token's loss is weighted by ρ = π_trainer / π_sampler truncated at ``cap``
    (``cap`` ≤ 0: no correction, weights 1; the mismatch is measured either way). NaN sampler log-probs mean
    unknown: weight 1, left out of the statistics."""
    with torch.no_grad():
        known = ~torch.isnan(sampler_logprobs) & (loss_mask > 0)
        log_ratio = torch.where(known, trainer_logprobs.float() - sampler_logprobs.float(),
                                torch.zeros_like(trainer_logprobs))
        ratio = torch.exp(log_ratio)
        weights = (torch.where(known, ratio.clamp(max=cap), torch.ones_like(ratio)) if cap > 0
                   else torch.ones_like(log_ratio))
        return Mismatch(weights=weights, abs_diff=float(log_ratio.abs().sum()),
                        kl=float(((ratio - 1.0 - log_ratio) * known).sum()),
                        capped=int(((ratio > cap) & known).sum()) if cap > 0 else 0, tokens=int(known.sum()))


# ---------------------------------------------------------------------------------------------- loss
@dataclass
class LossStats:
    loss: float
    pg_loss: float
    kl: float
    clip_fraction: float
    ratio_mean: float
    tokens: int


def grpo_loss(
    new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, loss_mask: torch.Tensor,
    *, weights: torch.Tensor | None = None, clip_low: float = 0.2, clip_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None, kl_coef: float = 0.0, normalizer: float | None = None,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """Clipped surrogate with clip-higher, token-mean over every model token of the batch.

    per token: -min(ρ·A, clip(ρ, 1-clip_low, 1+clip_high)·A) + kl_coef·KL_k3(π‖π_ref), ρ = exp(new - old).
    ``advantages`` [B] broadcast to every token of the trajectory; ``loss_mask`` [B, T] zeroes observation and
    padding tokens; ``weights`` [B] scale whole trajectories (0 = skip). The sum is divided by ``normalizer``
    (the number of weighted model tokens in the whole batch, so micro-batches add up to the batch's token
    mean) or, when None, by this call's own count. NaN old log-probs mean "sampled by this very policy":
    they are replaced by the detached new ones (ratio 1). ``is_weights`` [B, T] (truncated importance weights,
    :func:`tis_weights`) scale each token's policy-gradient term."""
    old = torch.where(torch.isnan(old_logprobs), new_logprobs.detach(), old_logprobs)
    w = loss_mask * (weights[:, None] if weights is not None else 1.0)
    adv = advantages[:, None].to(new_logprobs.dtype)
    ratio = torch.exp(new_logprobs - old)
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    if is_weights is not None:
        per_token = per_token * is_weights
    kl = torch.zeros_like(per_token)
    if ref_logprobs is not None:  # measured whenever given; part of the loss only with kl_coef > 0
        log_ratio = ref_logprobs - new_logprobs
        kl = torch.exp(log_ratio) - log_ratio - 1.0
        if kl_coef > 0:
            per_token = per_token + kl_coef * kl
    denom = float(normalizer) if normalizer is not None else float(w.sum().item())
    denom = max(denom, 1e-8)
    loss = (per_token * w).sum() / denom
    with torch.no_grad():
        m = loss_mask > 0
        n = int(m.sum().item())
        was_clipped = ((ratio < 1.0 - clip_low) & (adv < 0)) | ((ratio > 1.0 + clip_high) & (adv > 0))
        stats = LossStats(
            loss=float(loss.item()),
            pg_loss=float(((per_token - kl_coef * kl) * w).sum().item() / denom),
            kl=float((kl * loss_mask).sum().item() / max(n, 1)),
            clip_fraction=float((was_clipped & m).sum().item() / max(n, 1)),
            ratio_mean=float((ratio * loss_mask).sum().item() / max(n, 1)),
            tokens=n,
        )
    return loss, stats
