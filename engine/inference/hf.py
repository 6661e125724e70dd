"""``hf`` — batched in-process generation with a transformers model (CPU and one GPU; the default sampler).

Requests from every rollout worker are collected for a few milliseconds (or until ``max_batch`` are waiting),
left-padded into one batch, prefilled once, then decoded with one batched forward per token over the KV cache;
finished rows leave the batch. Each request draws its randomness from its own generator seeded with its own seed
(one uniform number per token, inverse-CDF sampling), so a request gives the same tokens whether it runs alone or
in a batch (up to float rounding between batch shapes). No global lock: the model is shared, batches run one at a
time on the sampler's thread.

Multi-turn episodes only append to their conversation, so the KV of each finished request (its prompt and the
tokens it generated) is kept in a prefix cache (LRU, ``prefix_cache_tokens`` at most); the episode's next request
finds it and prefills only its new messages. Rows with different cached lengths share a batch: cached keys are
right-aligned, new tokens follow, the gaps are masked. The cache is cleared whenever new weights are published.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from typing import Any, Sequence

from .base import Batcher, Sample, SampleRequest


def _cache_kwarg(model: Any) -> str:
    """transformers 5 calls the KV cache argument ``cache``; 4.x called it ``past_key_values``."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def _seed(request: SampleRequest) -> int:
    import torch  # heavy optional dependency

    if request.seed is not None:
        return int(request.seed) % (2**63 - 1)
    return int(torch.randint(0, 2**62, (1,)).item())


def pick_tokens(logits: Any, requests: Sequence[SampleRequest],
                generators: Sequence[Any]) -> tuple[list[int], list[float]]:
    """Next token and its log-prob for each row of ``logits`` [n, V]. Greedy rows (temperature 0) take the argmax
    and report log-softmax of the raw logits; sampled rows divide by the temperature, keep the top-p nucleus (as
    transformers' TopPLogitsWarper: drop the least likely tokens while their mass stays <= 1 - top_p) and report
    the log-prob under that truncated, renormalized distribution."""
    import torch  # heavy optional dependency

    logits = logits.float()
    temps = torch.tensor([r.temperature or 1.0 for r in requests], dtype=torch.float32, device=logits.device)
    scaled = logits / temps[:, None]
    top_p = [r.top_p if r.temperature > 0 else 1.0 for r in requests]
    if min(top_p) < 1.0:
        p = torch.tensor(top_p, dtype=torch.float32, device=logits.device)
        ascending, order = torch.sort(scaled, dim=-1)
        drop = ascending.softmax(-1).cumsum(-1) <= (1.0 - p)[:, None]
        drop[:, -1] = False
        scaled = scaled.masked_fill(drop.scatter(1, order, drop), float("-inf"))
    logp = scaled.log_softmax(-1)
    greedy = logits.argmax(-1)
    sampled = [i for i, r in enumerate(requests) if r.temperature > 0]
    tokens = greedy.clone()
    if sampled:
        rows = torch.tensor(sampled, device=logits.device)
        u = torch.tensor([float(torch.rand((), generator=generators[i])) for i in sampled], dtype=torch.float64,
                         device=logits.device)
        cdf = logp[rows].exp().double().cumsum(-1)
        picks = torch.searchsorted(cdf, (u * cdf[:, -1])[:, None], right=True).squeeze(-1)
        tokens[rows] = picks.clamp(max=logits.shape[-1] - 1)
    lps = logp.gather(1, tokens[:, None]).squeeze(-1)
    return tokens.tolist(), [float(x) for x in lps.tolist()]


class PrefixCache:
    """Per-layer (keys, values) of finished requests, keyed by the token ids they hold; least recently stored
    entries go first once ``max_tokens`` is exceeded (0 = off)."""

    def __init__(self, max_tokens: int):
        self.max_tokens = int(max_tokens)
        self.entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self.tokens = 0

    def take(self, prompt: tuple[int, ...]) -> tuple[int, list[tuple[Any, Any]] | None]:
        """(cached length, per-layer KV) of the longest entry that is a proper prefix of ``prompt`` — removed:
        the request extends it and stores the longer one."""
        best = max((k for k in self.entries if len(k) < len(prompt) and prompt[: len(k)] == k), key=len, default=None)
        if best is None:
            return 0, None
        self.tokens -= len(best)
        return len(best), self.entries.pop(best)

    def put(self, key: tuple[int, ...], kv: list[tuple[Any, Any]]) -> None:
        if not 0 < len(key) <= self.max_tokens:
            return
        self.entries.pop(key, None)
        self.entries[key] = kv
        self.tokens += len(key)
        while self.tokens > self.max_tokens:
            self.tokens -= len(self.entries.popitem(last=False)[0])

    def clear(self) -> None:
        self.entries.clear()
        self.tokens = 0


class HFSampler:
    """The batched sampler around a (PEFT) causal LM already in memory, e.g. the trainer's live policy."""

    def __init__(self, model: Any, *, pad_id: int, max_batch: int = 16, wait_ms: float = 5.0, version: int = 0,
                 prefix_cache_tokens: int = 32768, name: str = "hf"):
        self.model, self.pad_id, self.version, self.name = model, int(pad_id), int(version), name
        self.prefix = PrefixCache(prefix_cache_tokens)
        self._batcher = Batcher(self._run_batch, max_batch=max_batch, wait_ms=wait_ms, name=name)
        self.stats = self._batcher.stats

    def generate(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        return self._batcher.submit(requests)

    def publish(self, model: Any, version: int) -> None:
        """The model is shared in memory: from the next batch on, samples are version ``version`` (the prefix
        cache, computed with the old weights, is dropped)."""
        with self._batcher.weights:
            self.model, self.version = model, int(version)
            self.prefix.clear()

    def sleep(self) -> None:
        self._batcher.weights.acquire()

    def wake_up(self) -> None:
        self._batcher.weights.release()

    def close(self) -> None:
        self._batcher.close()

    def _run_batch(self, requests: list[SampleRequest]) -> list[Sample]:
        import torch  # heavy optional dependency

        model, version = self.model, self.version
        device = next(model.parameters()).device
        n = len(requests)
        hits = [self.prefix.take(r.prompt_ids) for r in requests]
        width = max(c for c, _ in hits)  # cached columns, right-aligned
        step = max(len(r.prompt_ids) - c for r, (c, _) in zip(requests, hits))  # new columns, right-aligned
        ids = torch.full((n, step), self.pad_id, dtype=torch.long)
        att = torch.zeros((n, width + step), dtype=torch.long)
        pos = torch.zeros((n, step), dtype=torch.long)
        for b, (r, (c, _)) in enumerate(zip(requests, hits)):
            new = len(r.prompt_ids) - c
            ids[b, step - new:] = torch.tensor(r.prompt_ids[c:], dtype=torch.long)
            att[b, width - c:width] = 1
            att[b, width + step - new:] = 1
            pos[b, step - new:] = torch.arange(c, len(r.prompt_ids))
        self.stats.prefill_tokens += sum(len(r.prompt_ids) - c for r, (c, _) in zip(requests, hits))
        self.stats.cached_tokens += sum(c for c, _ in hits)
        key = _cache_kwarg(model)
        extra = {key: _batch_cache(hits, width, n)} if width else {}
        generators = [torch.Generator().manual_seed(_seed(r)) for r in requests]
        out_ids: list[list[int]] = [[] for _ in requests]
        out_lps: list[list[float]] = [[] for _ in requests]
        finish = ["length"] * n
        live = list(range(n))
        ids, att, pos = ids.to(device), att.to(device), pos.to(device)
        with torch.no_grad():
            out = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True, logits_to_keep=1,
                        **extra)
            cache, last = out[key], pos[:, -1]
            while True:
                tokens, lps = pick_tokens(out.logits[:, -1, :], [requests[i] for i in live],
                                          [generators[i] for i in live])
                keep: list[int] = []
                for row, i in enumerate(live):
                    out_ids[i].append(tokens[row])
                    out_lps[i].append(lps[row])
                    if tokens[row] in requests[i].stop_ids:
                        finish[i] = "stop"
                    elif len(out_ids[i]) < requests[i].max_new_tokens:
                        keep.append(row)
                        continue
                    self._remember(cache, att, row, requests[i].prompt_ids + tuple(out_ids[i][:-1]))
                if not keep:
                    break
                nxt = torch.tensor(tokens, dtype=torch.long, device=device)
                if len(keep) < len(live):
                    rows = torch.tensor(keep, dtype=torch.long, device=device)
                    cache.batch_select_indices(rows)
                    att, last, nxt = att[rows], last[rows], nxt[rows]
                    live = [live[r] for r in keep]
                att = torch.cat([att, att.new_ones((len(live), 1))], dim=1)
                last = last + 1
                out = model(input_ids=nxt[:, None], attention_mask=att, position_ids=last[:, None],
                            use_cache=True, **{key: cache})
                cache = out[key]
        return [Sample(out_ids[i], out_lps[i], finish[i], version) for i in range(n)]

    def _remember(self, cache: Any, att: Any, row: int, tokens: tuple[int, ...]) -> None:
        """Keep a finished row's KV (its real columns) for the conversation's next request."""
        layers = getattr(cache, "layers", None)
        if self.prefix.max_tokens <= 0 or not layers or any(getattr(layer, "is_sliding", False) for layer in layers):
            return
        real = att[row].bool()
        if int(real.sum()) != len(tokens):
            return
        self.prefix.put(tokens, [(layer.keys[row][:, real], layer.values[row][:, real]) for layer in layers])


def _batch_cache(hits: list[tuple[int, list[tuple[Any, Any]] | None]], width: int, n: int) -> Any:
    """One DynamicCache of ``width`` columns from per-row cached KV, right-aligned (zeros, masked, on the left)."""
    import torch  # heavy optional dependency
    from transformers import DynamicCache  # heavy optional dependency

    sample = next(kv for _, kv in hits if kv is not None)
    data = []
    for layer, (k0, v0) in enumerate(sample):
        keys = k0.new_zeros((n, k0.shape[0], width, k0.shape[-1]))
        values = v0.new_zeros((n, v0.shape[0], width, v0.shape[-1]))
        for b, (c, kv) in enumerate(hits):
            if kv is not None:
                keys[b, :, width - c:] = kv[layer][0]
                values[b, :, width - c:] = kv[layer][1]
        data.append((keys, values))
    return DynamicCache(ddp_cache_data=data)
