"""``hf`` — batched in-process generation with a transformers model (CPU and one GPU; the default sampler).

Requests from every rollout worker are collected for a few milliseconds (or until ``max_batch`` are waiting).
Each prompt is prefilled alone (no padding: the fast causal attention applies), on top of the longest prefix of it
the sampler has already read; then the rows are left-padded into one cache and decoded together, one batched
forward per token; finished rows leave the batch. Each request draws its randomness from its own generator seeded
with its own seed (one uniform number per token, inverse-CDF sampling), so a request gives the same tokens whether
it runs alone or in a batch (up to float rounding between batch shapes). No global lock: the model is shared,
batches run one at a time on the sampler's thread.

The prefix cache: multi-turn episodes only append to their conversation, so the KV of each finished request (its
prompt and the tokens it generated) is kept, and the episode's next turn prefills only its new messages; a prompt
read once is kept too, so the rollouts of a GRPO group (same task, same prompt) read it once. LRU within
``prefix_cache_tokens``; cleared whenever new weights are published.

Shared prefixes while decoding: rows whose prompts start with the same ``share_min_tokens`` or more tokens (a GRPO
group's task prompt, and its episodes' later turns, which only append to it) keep that common prefix's KV once, not
once per row. At each decoding step a group's queries read it together — one matrix product per group and layer —
and each row reads only its own suffix; the two partial softmaxes are merged exactly (log-sum-exp). On a CPU, with
long prompts and a small model, reading every row's KV cache is most of a decoding step, and that is the part
batching alone cannot share. Used when the model runs transformers' ``sdpa`` attention (it is then registered as
``sandmle_shared_prefix``, which is ``sdpa`` for every call but these decoding steps).
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

from .base import Batcher, Sample, SampleRequest
from .nucleus import nucleus_drop


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
    if min(top_p) < 1.0:  # the trainer's log-probs apply the same rule (engine.inference.nucleus)
        p = torch.tensor(top_p, dtype=torch.float32, device=logits.device)
        scaled = scaled.masked_fill(nucleus_drop(scaled, p), float("-inf"))
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
    """Per-layer (keys, values) [heads, tokens, dim] of token sequences the model has read, keyed by those tokens;
    the least recently used go first once ``max_tokens`` is exceeded (0 = off). Entries are read, never written:
    a request copies what it finds into its own cache."""

    def __init__(self, max_tokens: int):
        self.max_tokens = int(max_tokens)
        self.entries: OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = OrderedDict()
        self.tokens = 0

    def find(self, prompt: tuple[int, ...]) -> tuple[int, list[tuple[Any, Any]] | None]:
        """(cached length, per-layer KV) of the longest entry that is a proper prefix of ``prompt`` (at least one
        token must be left to run: its logits pick the first new token)."""
        best = max((k for k in self.entries if len(k) < len(prompt) and prompt[: len(k)] == k), key=len, default=None)
        if best is None:
            return 0, None
        self.entries.move_to_end(best)
        return len(best), self.entries[best]

    def put(self, key: tuple[int, ...], kv: list[tuple[Any, Any]]) -> None:
        if not 0 < len(key) <= self.max_tokens:
            return
        if key in self.entries:
            self.tokens -= len(key)
        self.entries[key] = kv
        self.entries.move_to_end(key)
        self.tokens += len(key)
        while self.tokens > self.max_tokens:
            self.tokens -= len(self.entries.popitem(last=False)[0])

    def clear(self) -> None:
        self.entries.clear()
        self.tokens = 0


class HFSampler:
    """The batched sampler around a (PEFT) causal LM already in memory, e.g. the trainer's live policy."""

    def __init__(self, model: Any, *, max_batch: int = 16, wait_ms: float = 5.0, version: int = 0,
                 prefix_cache_tokens: int = 32768, share_min_tokens: int = 256, name: str = "hf"):
        self.model, self.version, self.name = model, int(version), name
        self.prefix = PrefixCache(prefix_cache_tokens)
        #: rows of a batch whose prompts share at least this many leading tokens decode on one copy of them (0 = off)
        self.share_min_tokens = int(share_min_tokens)
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
        key = _cache_kwarg(model)
        generators = [torch.Generator().manual_seed(_seed(r)) for r in requests]
        with torch.no_grad():
            rows, logits = zip(*(self._prefill(model, key, r.prompt_ids, device) for r in requests))
            groups = _share([r.prompt_ids for r in requests], self.share_min_tokens) \
                if self.share_min_tokens > 0 and _shared_prefix_attention(model) else []
            shared = SharedPrefixes.of(groups, list(rows))
            self.stats.shared_tokens += sum((len(members) - 1) * n for members, n in groups)
            suffixes = [len(r.prompt_ids) - shared.length(b) for b, r in enumerate(requests)]
            width, room = max(suffixes), max(r.max_new_tokens for r in requests)
            cache = _batch_cache([[(k[:, -n:] if n else k[:, :0], v[:, -n:] if n else v[:, :0]) for k, v in row]
                                  for row, n in zip(rows, suffixes)], width, room)
            att = torch.zeros((len(requests), width), dtype=torch.long, device=device)
            for b, n in enumerate(suffixes):
                att[b, width - n:] = 1
            last = torch.tensor([len(r.prompt_ids) - 1 for r in requests], device=device)
            out_logits = torch.stack(logits)
            out_ids: list[list[int]] = [[] for _ in requests]
            out_lps: list[list[float]] = [[] for _ in requests]
            finish = ["length"] * len(requests)
            live = list(range(len(requests)))
            while True:
                tokens, lps = pick_tokens(out_logits, [requests[i] for i in live], [generators[i] for i in live])
                keep: list[int] = []
                for row, i in enumerate(live):
                    out_ids[i].append(tokens[row])
                    out_lps[i].append(lps[row])
                    if tokens[row] in requests[i].stop_ids:
                        finish[i] = "stop"
                    elif len(out_ids[i]) < requests[i].max_new_tokens:
                        keep.append(row)
                        continue
                    self._remember(cache, shared, att, row, requests[i].prompt_ids + tuple(out_ids[i][:-1]))
                if not keep:
                    break
                nxt = torch.tensor(tokens, dtype=torch.long, device=device)
                if len(keep) < len(live):
                    sel = torch.tensor(keep, dtype=torch.long, device=device)
                    cache.batch_select_indices(sel)
                    shared.select(keep)
                    att, last, nxt = att[sel], last[sel], nxt[sel]
                    live = [live[r] for r in keep]
                att = torch.cat([att, att.new_ones((len(live), 1))], dim=1)
                last = last + 1
                extra = {"shared_prefixes": shared} if shared.groups else {}
                out = model(input_ids=nxt[:, None], attention_mask=att, position_ids=last[:, None],
                            use_cache=True, **{key: cache}, **extra)
                out_logits = out.logits[:, -1, :]
        return [Sample(out_ids[i], out_lps[i], finish[i], version) for i in range(len(requests))]

    def _prefill(self, model: Any, key: str, prompt: tuple[int, ...], device: Any) -> tuple[list, Any]:
        """Run one prompt alone (no padding, so the fast causal attention applies) on top of the longest cached
        prefix of it; keep its KV for later prompts that start with it. Returns (per-layer KV [heads, tokens,
        dim], the last position's logits)."""
        import torch  # heavy optional dependency
        from transformers import DynamicCache  # heavy optional dependency

        done, kv = self.prefix.find(prompt)
        self.stats.prefill_tokens += len(prompt) - done
        self.stats.cached_tokens += done
        # full-length layers always (no config: sliding-window layers would crop what the prefix cache keeps)
        past = DynamicCache(ddp_cache_data=[(k[None], v[None]) for k, v in kv]) if kv else DynamicCache()
        ids = torch.tensor([prompt[done:]], dtype=torch.long, device=device)
        pos = torch.arange(done, len(prompt), device=device)[None]
        out = model(input_ids=ids, position_ids=pos, use_cache=True, logits_to_keep=1, **{key: past})
        kv = [(layer.keys[0], layer.values[0]) for layer in out[key].layers]
        self.prefix.put(prompt[:-1], [(k[:, :-1], v[:, :-1]) for k, v in kv])  # for the same prompt again
        return kv, out.logits[0, -1]

    def _remember(self, cache: Any, shared: "SharedPrefixes", att: Any, row: int, tokens: tuple[int, ...]) -> None:
        """Keep a finished row's KV (its shared prefix and its own real columns) for the conversation's next
        request."""
        import torch  # heavy optional dependency

        real = att[row].bool()
        if self.prefix.max_tokens <= 0 or shared.length(row) + int(real.sum()) != len(tokens):
            return
        g = shared.group_of(row)
        kv = [(layer.keys[row][:, real], layer.values[row][:, real]) for layer in cache.layers]
        if g is not None:
            kv = [(torch.cat([pk, k], dim=1), torch.cat([pv, v], dim=1)) for (pk, pv), (k, v) in zip(shared.kv[g], kv)]
        self.prefix.put(tokens, kv)


def _common_length(a: tuple[int, ...], b: tuple[int, ...], limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _share(prompts: Sequence[tuple[int, ...]], min_tokens: int) -> list[tuple[list[int], int]]:
    """Groups of rows (at least two) whose prompts share at least ``min_tokens`` leading tokens, each with the
    length they all share; a row joins the first group it shares enough with."""
    groups: list[tuple[list[int], int]] = []
    for b, prompt in enumerate(prompts):
        for g, (members, n) in enumerate(groups):
            common = _common_length(prompts[members[0]], prompt, n)
            if common >= min_tokens:
                groups[g] = (members + [b], common)
                break
        else:
            groups.append(([b], len(prompt)))
    return [(members, n) for members, n in groups if len(members) > 1]


@dataclass
class SharedPrefixes:
    """The prompt prefixes rows of a decoding batch share: per group, its rows (positions in the batch, as a list
    and as an index tensor) and the per-layer (keys, values) [heads, tokens, dim] of the prefix, kept once."""

    groups: list[list[int]]
    index: list[Any]
    kv: list[list[tuple[Any, Any]]]

    @classmethod
    def of(cls, groups: list[tuple[list[int], int]], rows: list[list[tuple[Any, Any]]]) -> "SharedPrefixes":
        import torch  # heavy optional dependency

        members = [m for m, _ in groups]
        device = rows[0][0][0].device
        return cls(members, [torch.tensor(m, dtype=torch.long, device=device) for m in members],
                   [[(k[:, :n], v[:, :n]) for k, v in rows[m[0]]] for m, n in groups])

    def group_of(self, row: int) -> int | None:
        return next((g for g, members in enumerate(self.groups) if row in members), None)

    def length(self, row: int) -> int:
        """Tokens of ``row`` kept in its group's shared prefix (0 outside a group)."""
        g = self.group_of(row)
        return 0 if g is None else int(self.kv[g][0][0].shape[1])

    def select(self, keep: list[int]) -> None:
        """Only the rows ``keep`` stay in the batch, renumbered in that order; a group without rows goes."""
        import torch  # heavy optional dependency

        new = {old: i for i, old in enumerate(keep)}
        kept = [([new[r] for r in members if r in new], kv) for members, kv in zip(self.groups, self.kv)]
        kept = [(members, kv) for members, kv in kept if members]
        self.groups, self.kv = [m for m, _ in kept], [kv for _, kv in kept]
        self.index = [torch.tensor(m, dtype=torch.long, device=i.device) for m, i in zip(self.groups, self.index)]


@functools.cache
def _register_shared_prefix_attention() -> str:
    """Register ``sandmle_shared_prefix`` with transformers: ``sdpa`` (its attention and its masks), except in a
    decoding step given ``shared_prefixes``, where each group's queries read their shared prefix once."""
    import torch  # heavy optional dependency
    from transformers import AttentionInterface  # heavy optional dependency
    from transformers.integrations.sdpa_attention import sdpa_attention_forward  # heavy optional dependency
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask  # heavy optional dependency

    def attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, *, scaling: float | None = None,
                  shared_prefixes: SharedPrefixes | None = None, **kwargs: Any) -> tuple[Any, None]:
        if shared_prefixes is None or query.shape[2] != 1:
            return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
        batch, heads, _, dim = query.shape
        kv_heads = key.shape[1]
        # head h reads kv head h // (heads / kv_heads): the query heads of one kv head side by side
        q = query.reshape(batch, kv_heads, heads // kv_heads, dim) * (dim ** -0.5 if scaling is None else scaling)
        # each row's own columns (the rest of its prompt and what it generated): at least its newest token
        scores = torch.matmul(q, key.transpose(-1, -2))
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask, float("-inf")) if attention_mask.dtype == torch.bool \
                else scores + attention_mask
        top = scores.amax(-1, keepdim=True)
        weights = (scores - top).exp()
        total, out = weights.sum(-1, keepdim=True), torch.matmul(weights, value)
        # each group's shared prefix: all its rows' queries against one copy of its keys and values
        g_top, g_total, g_out = torch.full_like(top, float("-inf")), torch.zeros_like(total), torch.zeros_like(out)
        for rows, kv in zip(shared_prefixes.index, shared_prefixes.kv):
            k, v = kv[module.layer_idx]  # [kv heads, prefix, dim]
            s = torch.matmul(q.index_select(0, rows).transpose(0, 1).reshape(kv_heads, -1, dim), k.transpose(-1, -2))
            s_top = s.amax(-1, keepdim=True)
            w = (s - s_top).exp()
            for into, part in ((g_top, s_top), (g_total, w.sum(-1, keepdim=True)), (g_out, torch.matmul(w, v))):
                into.index_copy_(0, rows, part.reshape(kv_heads, len(rows), -1, part.shape[-1]).transpose(0, 1))
        # the two partial softmaxes merged exactly (rows outside any group: theirs is 0)
        both = torch.maximum(top, g_top)
        mine, theirs = (top - both).exp(), (g_top - both).exp()
        out = (out * mine + g_out * theirs) / (total * mine + g_total * theirs)
        return out.reshape(batch, heads, 1, dim).transpose(1, 2).contiguous(), None

    AttentionInterface.register("sandmle_shared_prefix", attention)
    AttentionMaskInterface.register("sandmle_shared_prefix", sdpa_mask)
    return "sandmle_shared_prefix"


def _shared_prefix_attention(model: Any) -> bool:
    """Whether ``model`` can decode on shared prefixes: every layer attends to the whole context (no sliding
    window, which the shared prefix would ignore) and it runs ``sdpa`` attention (switched here to the registered
    ``sandmle_shared_prefix``, the same for every other call) or already runs that."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    layer_types = getattr(base.config, "layer_types", None) or ["full_attention"]
    if getattr(base.config, "use_sliding_window", False) or set(layer_types) != {"full_attention"}:
        return False
    name = _register_shared_prefix_attention()
    if base.config._attn_implementation == "sdpa":
        base.set_attn_implementation(name)
    return bool(base.config._attn_implementation == name)


def _batch_cache(rows: list[list[tuple[Any, Any]]], width: int, room: int) -> Any:
    """One cache for a batch of rows of per-layer KV [heads, tokens, dim], right-aligned in ``width`` columns
    (zeros, masked, on the left) with ``room`` spare columns to decode into."""
    from transformers import DynamicCache  # heavy optional dependency

    layer = _growing_layer()
    cache = DynamicCache()
    cache.layers = [layer([row[i] for row in rows], width, room) for i in range(len(rows[0]))]
    return cache


@functools.cache
def _growing_layer() -> type:
    """transformers' ``DynamicLayer`` (imported only when a model runs) that decodes into spare columns instead of
    concatenating the whole cache again at every token — most of a decoding step's cost on a CPU with long
    prompts."""
    import torch  # heavy optional dependency
    from transformers.cache_utils import DynamicLayer  # heavy optional dependency

    class GrowingLayer(DynamicLayer):
        def __init__(self, rows: list[tuple[Any, Any]], width: int, room: int):
            super().__init__()
            k0, v0 = rows[0]
            self.lazy_initialization(k0, v0)
            self._k = k0.new_zeros((len(rows), k0.shape[0], width + room, k0.shape[-1]))
            self._v = v0.new_zeros((len(rows), v0.shape[0], width + room, v0.shape[-1]))
            for b, (k, v) in enumerate(rows):
                self._k[b, :, width - k.shape[1]:width] = k
                self._v[b, :, width - v.shape[1]:width] = v
            self._n = width
            self._view()

        def _view(self) -> None:
            self.keys, self.values = self._k[:, :, : self._n], self._v[:, :, : self._n]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            m = key_states.shape[-2]
            while self._n + m > self._k.shape[-2]:  # beyond the planned room: double it
                self._k = torch.cat([self._k, torch.zeros_like(self._k)], dim=-2)
                self._v = torch.cat([self._v, torch.zeros_like(self._v)], dim=-2)
            self._k[:, :, self._n:self._n + m] = key_states
            self._v[:, :, self._n:self._n + m] = value_states
            self._n += m
            self._view()
            return self.keys, self.values

        def batch_select_indices(self, indices: Any) -> None:
            self._k, self._v = self._k[indices], self._v[indices]
            self._view()

    return GrowingLayer
