"""One GRPO optimizer step on a batch of trajectories already turned into token sequences."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Hashable, Sequence

import torch

from .distributed import ONE, Processes
from .objective import LossStats, TokenSequence, collate, grpo_loss, tis_weights


@dataclass
class UpdateStats:
    loss: float = 0.0
    pg_loss: float = 0.0
    kl: float = 0.0
    clip_fraction: float = 0.0
    ratio_mean: float = 1.0
    grad_norm: float = 0.0
    trained_trajectories: int = 0
    trained_tokens: int = 0
    #: engine/trainer mismatch over model tokens with a sampler log-prob: mean |Δ log p|, KL(sampler ‖ trainer)
    #: (k3), share of tokens whose importance weight hit the cap, and how many tokens were compared
    sampler_logp_diff: float = 0.0
    sampler_kl: float = 0.0
    tis_capped: float = 0.0
    sampler_tokens: int = 0


def grpo_update(
    scorer: Any, optimizer: torch.optim.Optimizer, seqs: Sequence[TokenSequence], advantages: Sequence[float],
    weights: Sequence[float], *, clip_low: float = 0.2, clip_high: float = 0.28, kl_coef: float = 0.0,
    micro_batch: int = 4, mu: int = 1, max_grad_norm: float = 1.0, pad_id: int = 0, device: str = "cpu",
    tis_cap: float = 2.0, processes: Processes = ONE, owners: Sequence[Hashable] | None = None,
) -> UpdateStats:
    """``mu`` passes of: token-mean clipped loss over every model token of the trajectories with weight > 0,
    accumulated over micro-batches, then one clipped optimizer step. Trajectories with weight 0 (skipped
    groups, timed-out or over-long episodes) never reach the model. The ratio's denominator is the trainer's own
    log-prob before the update (the first pass's, detached); the sampler's log-probs enter only through the
    truncated importance weights min(π_trainer / π_sampler, ``tis_cap``), measured on the first pass. The KL to
    the policy GRPO started from (:meth:`~.distributed.TokenLogProbs.reference`) is measured on every micro-batch
    when it is part of the loss, else on the first one only (for the collapse watch).

    ``scorer`` is the policy's :class:`~.distributed.TokenLogProbs` (as :meth:`Processes.prepare` returns it;
    its temperature and top-p are the sampler's, so ratios compare like with like). Collectives: only the
    gradient exchange of each pass's last micro-batch (every process has one, an empty one included) and the
    sums of numbers, in the same order on every process whatever its number of micro-batches. With several
    ``processes`` each passes its own share of the batch and the token mean is over the whole batch: the
    normalizer is the total over processes, and DDP's mean of the gradients times the world size is their sum
    — the same update as one process taking the whole batch. Statistics are over the whole batch too."""
    policy = processes.unwrap(scorer)
    keep = [i for i, w in enumerate(weights) if w > 0 and seqs[i].model_tokens > 0]
    stats = UpdateStats()
    normalizer = processes.total(sum(weights[i] * seqs[i].model_tokens for i in keep))
    if normalizer <= 0:
        return stats
    # a trajectory may be several sequences (one per reply context: aide); ``owners`` says whose each one is
    stats.trained_trajectories = int(processes.total(len({owners[i] for i in keep} if owners is not None else keep)))
    stats.trained_tokens = int(processes.total(sum(seqs[i].model_tokens for i in keep)))
    # a process without trajectories of its own still takes part in every gradient exchange, with a zero loss
    chunks = [keep[j:j + micro_batch] for j in range(0, len(keep), micro_batch)] or [[]]
    scale = float(processes.world_size)  # DDP averages the gradients of the processes: undo it, to sum them
    scorer.train()
    totals = {"loss": 0.0, "pg": 0.0, "kl": 0.0, "kl_n": 0.0, "clip": 0.0, "ratio": 0.0, "n": 0.0}
    # per micro-batch: the trainer's log-probs before the update and the importance weights (first pass)
    before: list[tuple[torch.Tensor, torch.Tensor]] = []
    for k in range(mu):
        optimizer.zero_grad(set_to_none=True)
        for j, idx in enumerate(chunks):
            with processes.no_sync(scorer) if j < len(chunks) - 1 else nullcontext():
                if not idx:
                    ids = torch.full((1, 2), pad_id, dtype=torch.long, device=device)
                    processes.backward(scorer(ids, torch.ones_like(ids)).sum() * 0.0)
                    continue
                batch = collate([seqs[i] for i in idx], [advantages[i] for i in idx], [weights[i] for i in idx],
                                pad_id)
                ids, att = batch.input_ids.to(device), batch.attention_mask.to(device)
                mask = batch.loss_mask.to(device)
                ref_lp = None
                if kl_coef > 0 or totals["kl_n"] == 0:  # the unwrapped module: no collective in a no-grad pass
                    ref_lp = policy.reference(ids, att)
                new_lp = scorer(ids, att)
                if k == 0:
                    mm = tis_weights(new_lp.detach(), batch.old_logprobs.to(device), mask, tis_cap)
                    before.append((new_lp.detach(), mm.weights))
                    stats.sampler_logp_diff += mm.abs_diff
                    stats.sampler_kl += mm.kl
                    stats.tis_capped += mm.capped
                    stats.sampler_tokens += mm.tokens
                loss, ls = grpo_loss(
                    new_lp, before[j][0], batch.advantages.to(device), mask, weights=batch.weights.to(device),
                    clip_low=clip_low, clip_high=clip_high, ref_logprobs=ref_lp, kl_coef=kl_coef,
                    normalizer=normalizer, is_weights=before[j][1],
                )
                processes.backward(loss * scale)
                _accumulate(totals, ls, with_kl=ref_lp is not None)
        params = [p for p in scorer.parameters() if p.requires_grad]
        stats.grad_norm = processes.clip_grad_norm(params, max_grad_norm)
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return _whole_batch(stats, totals, mu, processes)


def _accumulate(totals: dict[str, float], ls: LossStats, *, with_kl: bool) -> None:
    """Add one micro-batch's loss statistics (``grpo_loss``'s) to the running sums, token-weighted."""
    totals["loss"] += ls.loss
    totals["pg"] += ls.pg_loss
    if with_kl:
        totals["kl"] += ls.kl * ls.tokens
        totals["kl_n"] += ls.tokens
    totals["clip"] += ls.clip_fraction * ls.tokens
    totals["ratio"] += ls.ratio_mean * ls.tokens
    totals["n"] += ls.tokens


def _whole_batch(stats: UpdateStats, totals: dict[str, float], mu: int, processes: Processes) -> UpdateStats:
    """The update's statistics over the whole batch: sums over every process, then means (per pass, per token,
    per compared token)."""
    totals = {key: processes.total(value) for key, value in totals.items()}
    n = max(totals["n"], 1)
    stats.loss = totals["loss"] / mu
    stats.pg_loss = totals["pg"] / mu
    stats.kl = totals["kl"] / max(totals["kl_n"], 1)
    stats.clip_fraction = totals["clip"] / n
    stats.ratio_mean = totals["ratio"] / n
    compared = max(processes.total(stats.sampler_tokens), 1)
    stats.sampler_logp_diff = processes.total(stats.sampler_logp_diff) / compared
    stats.sampler_kl = processes.total(stats.sampler_kl) / compared
    stats.tis_capped = processes.total(stats.tis_capped) / compared
    stats.sampler_tokens = int(compared)
    return stats


def make_optimizer(model: Any, lr: float, weight_decay: float = 0.0) -> torch.optim.Optimizer:
    params = [p for p in model.parameters() if p.requires_grad]
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
