"""Rendering messages into tokens exactly once (the hf policy never re-tokenizes history).

Two formats: the tokenizer's chat template when it has one (each message's tokens = the template's text for the
conversation up to it, minus the text up to the previous one), else the plain format of the tiny tokenizer::

    <|system|>\\n...<|end|><|user|>\\n...<|end|><|assistant|>\\n...<|end|><|tool|>\\n...<|end|>

The generation prompt (``<|assistant|>\\n``) is part of the message *before* an assistant turn, so an assistant
message's ``token_ids`` are exactly the tokens the model generated (aligned 1:1 with its ``logprobs``) and the
sequence the model saw is always the concatenation of the messages' ``token_ids``. For GRPO: prompt = the first
system + user messages, completion = the rest, env mask = 1 on assistant messages only.
"""

from __future__ import annotations

from typing import Any

from store.trajectories import Turn


class ChatFormat:
    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        self.template = bool(getattr(tokenizer, "chat_template", None))
        if self.template:
            full = self._text([{"role": "user", "content": "x"}], True)
            base = self._text([{"role": "user", "content": "x"}], False)
            self.header_text = full[len(base):]
            end = getattr(tokenizer, "eos_token", None) or ""
            self.end_text = "<|im_end|>" if "<|im_end|>" in full or "<|im_end|>" in base else end
        else:
            self.header_text = "<|assistant|>\n"
            self.end_text = getattr(tokenizer, "eos_token", None) or "<|end|>"
        self.header = self.encode_text(self.header_text)
        self.stop_ids = sorted({i for i in (tokenizer.convert_tokens_to_ids(self.end_text), tokenizer.eos_token_id)
                                if isinstance(i, int) and i >= 0})

    # ------------------------------------------------------------------ text
    def _text(self, msgs: list[dict], gen: bool) -> str:
        return self.tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=gen)

    def encode_text(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    @staticmethod
    def _role(role: str) -> str:
        return role if role in ("system", "user", "assistant", "tool") else "user"

    def message_text(self, messages: list[Turn], i: int) -> str:
        m = messages[i]
        if m.role == "assistant":
            return m.text + self.end_text
        if not self.template:
            return f"<|{self._role(m.role)}|>\n{m.text}{self.end_text}"
        conv = [{"role": self._role(x.role), "content": x.text} for x in messages[: i + 1]]
        before = self._text(conv[:i], False) if i else ""
        now = self._text(conv, False)
        if now.startswith(before):
            return now[len(before):]
        return self._text(conv[i:], False)

    # ------------------------------------------------------------------ tokens
    def _ends_with_header(self, ids: list[int]) -> bool:
        return len(ids) >= len(self.header) and ids[len(ids) - len(self.header):] == self.header

    def fill(self, messages: list[Turn], *, generation_prompt: bool = False) -> None:
        """Fill ``token_ids`` of every message that has none (in place); never touch rendered ones, except to add
        the generation prompt to the message right before an assistant turn."""
        for i, m in enumerate(messages):
            if m.token_ids is None:
                m.token_ids = self.encode_text(self.message_text(messages, i))
            if m.role == "assistant" and i > 0 and not self._ends_with_header(messages[i - 1].token_ids or []):
                messages[i - 1].token_ids = list(messages[i - 1].token_ids or []) + self.header
        if generation_prompt and messages and not self._ends_with_header(messages[-1].token_ids or []):
            messages[-1].token_ids = list(messages[-1].token_ids or []) + self.header

    def sequence(self, messages: list[Turn]) -> list[int]:
        return [t for m in messages for t in (m.token_ids or [])]
