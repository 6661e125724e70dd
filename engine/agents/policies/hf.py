"""``hf`` — a local transformers causal LM (folder or hub id) plus an optional PEFT adapter.

Renders messages into tokens once (see :mod:`.chat`: history is never re-tokenized) and samples through a
:class:`~engine.inference.Sampler` — by default its own batched :class:`~engine.inference.hf.HFSampler`, so every
thread acting with this policy (eval workers, rollout workers) shares batched forward passes; GRPO passes the
trainer's sampler (hf or vLLM). Keeps, per assistant turn, the generated token ids exactly as sampled, their
log-probs under the sampling distribution (after temperature and top-p), the finish reason and the policy version
that produced them.
"""

from __future__ import annotations

from typing import Any

from store.trajectories import Turn

from ...inference import SampleRequest, Sampler
from ...inference.hf import HFSampler
from ...models.loading import from_pretrained
from ..policy import Action, PolicyError
from .chat import ChatFormat


class HFPolicy:
    def __init__(self, model: str, *, adapter: str | None = None, device: str | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 512,
                 max_context: int | None = None, max_batch: int = 16, wait_ms: float = 5.0,
                 prefix_cache_tokens: int = 32768):
        if max_batch < 1 or wait_ms < 0:
            raise PolicyError("hf policy: need max_batch >= 1 and wait_ms >= 0")
        self.model, self.tokenizer = from_pretrained(model, adapter=adapter, device=device)
        sampler = HFSampler(self.model, max_batch=max_batch, wait_ms=wait_ms,
                            prefix_cache_tokens=prefix_cache_tokens)
        self._setup(f"hf:{model}" + (f",adapter={adapter}" if adapter else ""), sampler, temperature, top_p,
                    max_new_tokens, max_context)

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, sampler: Sampler, *, name: str = "hf:in-memory",
                    temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 512,
                    max_context: int | None = None) -> "HFPolicy":
        """Wrap a model already in memory (the trainer's policy being optimised) and the sampler serving it."""
        self = cls.__new__(cls)
        self.model, self.tokenizer = model, tokenizer
        self._setup(name, sampler, float(temperature), float(top_p), int(max_new_tokens), max_context)
        return self

    def _setup(self, name: str, sampler: Sampler, temperature: float, top_p: float, max_new_tokens: int,
               max_context: int | None):
        if temperature < 0 or not 0 < top_p <= 1 or max_new_tokens < 1:
            raise PolicyError("hf policy: need temperature >= 0, 0 < top_p <= 1, max_new_tokens >= 1")
        self.name, self.sampler = name, sampler
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.chat = ChatFormat(self.tokenizer)
        cfg = getattr(self.model, "config", None)
        self.max_context = max_context or int(getattr(cfg, "max_position_embeddings", 4096) or 4096)

    def render_messages(self, messages: list[Turn]) -> None:
        """Fill the token ids of messages not rendered yet (e.g. the last observation of an episode)."""
        self.chat.fill(messages)

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        self.chat.fill(messages, generation_prompt=True)
        prompt = self.chat.sequence(messages)
        room = min(self.max_new_tokens, self.max_context - len(prompt))
        if room < 1:
            return Action(text="", token_ids=[], logprobs=[], usage={"prompt_tokens": len(prompt),
                                                                    "completion_tokens": 0, "context_full": 1})
        request = SampleRequest(tuple(prompt), room, self.temperature, self.top_p, rng_seed,
                                tuple(self.chat.stop_ids))
        sample = self.sampler.generate([request])[0]
        text = self.tokenizer.decode(sample.token_ids, skip_special_tokens=True)
        return Action(text=text, token_ids=sample.token_ids, logprobs=sample.logprobs,
                      usage={"prompt_tokens": len(prompt), "completion_tokens": len(sample.token_ids)},
                      policy_version=sample.version, finish_reason=sample.finish_reason)
