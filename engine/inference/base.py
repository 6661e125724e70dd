"""The sampler interface: token ids in, token ids + log-probs + finish reason out.

Rollout workers (GRPO, eval, SFT data collection) call :meth:`Sampler.generate` from many threads at once; the
sampler batches what arrives together. Nobody re-tokenizes: the ids a sample carries are exactly what the engine
produced, and exactly what GRPO trains on. Every sample also says which weights produced it (``version``: the
policy version published last, i.e. the number of GRPO updates behind it), so the trainer can refuse samples from
a stale adapter or from the base model.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Protocol, Sequence, runtime_checkable

from ..errors import SandmleError

if TYPE_CHECKING:  # heavy: only the type of the model a sampler publishes
    import torch

#: the name an adapter of policy version N is loaded under in an engine (vLLM)
ADAPTER_PREFIX = "policy-step-"


def adapter_name(version: int) -> str:
    return f"{ADAPTER_PREFIX}{int(version)}"


def adapter_version(name: str) -> int | None:
    """``policy-step-N`` → N; anything else (the base model's name) → None."""
    if name.startswith(ADAPTER_PREFIX) and name[len(ADAPTER_PREFIX):].isdigit():
        return int(name[len(ADAPTER_PREFIX):])
    return None


class SamplerError(SandmleError):
    """The sampler cannot serve a request (bad request, engine down, adapter not loaded)."""


class StaleSampleError(SamplerError):
    """A sample came from other weights than the ones expected (an older adapter, or the base model)."""


@dataclass(frozen=True)
class SampleRequest:
    prompt_ids: tuple[int, ...]
    max_new_tokens: int
    temperature: float = 1.0  #: 0 = greedy
    top_p: float = 1.0
    seed: int | None = None  #: per-request seed: the same seed gives the same sample, batched or not
    stop_ids: tuple[int, ...] = ()  #: generation ends after any of these (the stop token is kept)

    def __post_init__(self) -> None:
        if not self.prompt_ids:
            raise SamplerError("a sample request needs at least one prompt token")
        if self.max_new_tokens < 1 or self.temperature < 0 or not 0 < self.top_p <= 1:
            raise SamplerError("a sample request needs max_new_tokens >= 1, temperature >= 0 and 0 < top_p <= 1")


@dataclass
class Sample:
    token_ids: list[int]
    #: log-prob of each token under the distribution it was drawn from (after temperature and top-p)
    logprobs: list[float]
    finish_reason: str  #: "stop" (a stop token, kept as the last id) | "length"
    version: int | None  #: the policy version that produced it; None = the base model


@dataclass
class SamplerStats:
    requests: int = 0
    batches: int = 0
    tokens: int = 0
    busy_s: float = 0.0  #: wall time spent generating (batches run one at a time)
    prefill_tokens: int = 0  #: prompt tokens run through the model
    cached_tokens: int = 0  #: prompt tokens whose KV came from the prefix cache instead
    #: prompt tokens rows of a batch decoded on from another row's copy (a shared prefix) instead of their own
    shared_tokens: int = 0

    def __post_init__(self) -> None:
        self.lock = threading.Lock()  #: for samplers whose stats are updated from many threads

    @property
    def mean_batch(self) -> float:
        return self.requests / self.batches if self.batches else 0.0

    def snapshot(self) -> "SamplerStats":
        return SamplerStats(self.requests, self.batches, self.tokens, self.busy_s, self.prefill_tokens,
                            self.cached_tokens, self.shared_tokens)

    def since(self, before: "SamplerStats") -> dict[str, float]:
        batches = self.batches - before.batches
        return {"sampler_requests": float(self.requests - before.requests), "sampler_batches": float(batches),
                "sampler_tokens": float(self.tokens - before.tokens), "sampler_busy_s": self.busy_s - before.busy_s,
                "sampler_mean_batch": (self.requests - before.requests) / batches if batches else 0.0,
                "sampler_prefill_tokens": float(self.prefill_tokens - before.prefill_tokens),
                "sampler_cached_tokens": float(self.cached_tokens - before.cached_tokens),
                "sampler_shared_tokens": float(self.shared_tokens - before.shared_tokens)}


@runtime_checkable
class Sampler(Protocol):
    name: str
    version: int
    stats: SamplerStats

    def generate(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        """One sample per request, in order. Safe to call from many threads at once."""
        ...

    def publish(self, model: torch.nn.Module, version: int) -> None:
        """Make the trainer's current adapter (``model``, a PEFT model) the one sampled from, as ``version``."""
        ...

    def sleep(self) -> None:
        """Stop sampling and free what the update needs (the hf sampler holds its batches back; colocated vLLM
        offloads its weights and drops its KV cache)."""
        ...

    def wake_up(self) -> None: ...

    def close(self) -> None: ...


def check_fresh(versions: Sequence[int | None], expected: int, *, max_staleness: int = 0) -> None:
    """Refuse samples from the base model (version None) or from weights more than ``max_staleness`` updates
    older than ``expected``."""
    for v in versions:
        if v is None:
            raise StaleSampleError(f"a sample came from the base model, not from policy version {expected}")
        if v > expected or expected - v > max_staleness:
            raise StaleSampleError(f"a sample came from policy version {v}; expected {expected}"
                                   + (f" (at most {max_staleness} behind)" if max_staleness else ""))


@dataclass
class _Pending:
    request: SampleRequest
    done: threading.Event = field(default_factory=threading.Event)
    sample: Sample | None = None
    error: BaseException | None = None


class Batcher:
    """Collects requests from concurrent callers and runs them in batches on one background thread: a batch
    starts ``wait_ms`` after its first request arrived, or as soon as ``max_batch`` requests are waiting.
    ``run_batch(requests) -> samples`` does the work; :meth:`hold` keeps new batches from starting."""

    def __init__(self, run_batch: Callable[[list[SampleRequest]], list[Sample]], *, max_batch: int = 16,
                 wait_ms: float = 5.0, name: str = "sampler"):
        if max_batch < 1 or wait_ms < 0:
            raise SamplerError("the sampler needs max_batch >= 1 and wait_ms >= 0")
        self.run_batch, self.max_batch, self.wait_s = run_batch, int(max_batch), float(wait_ms) / 1000.0
        self.stats = SamplerStats()
        self.weights = threading.RLock()  #: held while a batch runs; hold it to change the weights safely
        self._queue: list[_Pending] = []
        self._cv = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=f"{name}-batcher", daemon=True)
        self._thread.start()

    def submit(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        pending = [_Pending(r) for r in requests]
        with self._cv:
            if self._closed:
                raise SamplerError("the sampler is closed")
            self._queue.extend(pending)
            self._cv.notify_all()
        for p in pending:
            p.done.wait()
        for p in pending:
            if p.error is not None:
                raise p.error
        return [p.sample for p in pending if p.sample is not None]

    def _take(self) -> list[_Pending] | None:
        with self._cv:
            while not self._queue and not self._closed:
                self._cv.wait()
            if self._closed and not self._queue:
                return None
            deadline = time.monotonic() + self.wait_s
            while len(self._queue) < self.max_batch and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(left)
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch:]
            return batch

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            t0 = time.perf_counter()
            try:
                with self.weights:
                    samples = self.run_batch([p.request for p in batch])
                for p, s in zip(batch, samples, strict=True):
                    p.sample = s
            except BaseException as exc:  # noqa: BLE001 - handed to every caller of this batch
                for p in batch:
                    p.error = exc
            finally:
                self.stats.busy_s += time.perf_counter() - t0
                self.stats.batches += 1
                self.stats.requests += len(batch)
                self.stats.tokens += sum(len(p.sample.token_ids) for p in batch if p.sample is not None)
                for p in batch:
                    p.done.set()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=60)
