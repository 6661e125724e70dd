"""``hf`` — a local transformers causal LM (folder or hub id) plus an optional PEFT adapter.

Keeps, per assistant turn, the generated token ids exactly as sampled and their log-probs under the sampling
distribution (after temperature and top-p), and never re-tokenizes history (see :mod:`.chat`).
"""

from __future__ import annotations

import threading
from typing import Any

from ...models.loading import from_pretrained
from ..policy import Action, Message, PolicyError
from .chat import ChatFormat


class HFPolicy:
    def __init__(self, model: str, *, adapter: str | None = None, device: str | None = None,
                 temperature: float = 1.0, top_p: float = 1.0, max_new_tokens: int = 512,
                 max_context: int | None = None):
        self.model, self.tokenizer = from_pretrained(model, adapter=adapter, device=device)
        self._setup(f"hf:{model}" + (f",adapter={adapter}" if adapter else ""), temperature, top_p, max_new_tokens,
                    max_context)

    @classmethod
    def from_loaded(cls, model: Any, tokenizer: Any, *, name: str = "hf:in-memory", temperature: float = 1.0,
                    top_p: float = 1.0, max_new_tokens: int = 512, max_context: int | None = None) -> "HFPolicy":
        """Wrap a model already in memory (the trainer's policy being optimised)."""
        self = cls.__new__(cls)
        self.model, self.tokenizer = model, tokenizer
        self._setup(name, float(temperature), float(top_p), int(max_new_tokens), max_context)
        return self

    def _setup(self, name: str, temperature: float, top_p: float, max_new_tokens: int, max_context: int | None):
        if temperature < 0 or not 0 < top_p <= 1 or max_new_tokens < 1:
            raise PolicyError("hf policy: need temperature >= 0, 0 < top_p <= 1, max_new_tokens >= 1")
        self.name = name
        self._lock = threading.Lock()  # one generation at a time: seeds stay reproducible under eval threads
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.chat = ChatFormat(self.tokenizer)
        cfg = getattr(self.model, "config", None)
        self.max_context = max_context or int(getattr(cfg, "max_position_embeddings", 4096) or 4096)

    @property
    def device(self):
        return next(self.model.parameters()).device

    def render_messages(self, messages: list[Message]) -> None:
        """Fill the token ids of messages not rendered yet (e.g. the last observation of an episode)."""
        self.chat.fill(messages)

    def act(self, messages: list[Message], *, rng_seed: int | None = None) -> Action:
        import torch

        self.chat.fill(messages, generation_prompt=True)
        prompt = self.chat.sequence(messages)
        room = min(self.max_new_tokens, self.max_context - len(prompt))
        if room < 1:
            return Action(text="", token_ids=[], logprobs=[], usage={"prompt_tokens": len(prompt),
                                                                    "completion_tokens": 0, "context_full": 1})
        input_ids = torch.tensor([prompt], dtype=torch.long, device=self.device)
        sample = self.temperature > 0
        kwargs: dict[str, Any] = dict(max_new_tokens=room, do_sample=sample, output_scores=True,
                                      return_dict_in_generate=True, eos_token_id=self.chat.stop_ids or None,
                                      pad_token_id=self.tokenizer.pad_token_id,
                                      attention_mask=torch.ones_like(input_ids))
        if sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p, top_k=0)
        with self._lock, torch.no_grad():
            if rng_seed is not None:
                torch.manual_seed(int(rng_seed))
            out = self.model.generate(input_ids, **kwargs)
        gen = out.sequences[0, len(prompt):].tolist()
        logprobs = []
        for step, token in enumerate(gen):
            dist = torch.log_softmax(out.scores[step][0].float(), dim=-1)
            logprobs.append(float(dist[token]))
        text = self.tokenizer.decode(gen, skip_special_tokens=True)
        return Action(text=text, token_ids=gen, logprobs=logprobs,
                      usage={"prompt_tokens": len(prompt), "completion_tokens": len(gen)})
