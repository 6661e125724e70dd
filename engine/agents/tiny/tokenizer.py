"""tiny's tokenizer: a byte-level BPE trained locally in seconds (``tokenizers``), with the plain chat format's
special tokens (``<|system|>``, ``<|user|>``, ``<|assistant|>``, ``<|tool|>``, ``<|end|>``) and ``<|pad|>``, and
**macro tokens** (:func:`macro_tokens`): the scripted teacher's fixed code blocks, strategy keys, tool-call wrappers
and scaffold prompts, each one token, so a react turn is 20–40 tokens and what the model learns is the choice of
blocks."""

from __future__ import annotations

import itertools
import json
import re

from .. import prompts
from .. import templates as tp

ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
END_TOKEN = "<|end|>"
PAD_TOKEN = "<|pad|>"
SPECIAL_TOKENS = [PAD_TOKEN, END_TOKEN, *ROLE_TOKENS]


def train_tokenizer(corpus: list[str], vocab_size: int = 2048, extra_tokens: list[str] | None = None):
    """A byte-level BPE tokenizer (``tokenizers``) wrapped as a PreTrainedTokenizerFast. ``extra_tokens`` are added
    whole (matched before BPE, longest first): e.g. frequent code blocks as single tokens (macro-actions)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # heavy: loaded when used
    from transformers import PreTrainedTokenizerFast  # heavy optional dependency: loaded only when used

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=END_TOKEN, pad_token=PAD_TOKEN,
                                   bos_token=None, unk_token=None, additional_special_tokens=ROLE_TOKENS)
    if extra_tokens:
        from tokenizers import AddedToken  # heavy optional dependency: loaded only when used

        fast.add_tokens([AddedToken(t, normalized=False, special=False) for t in dict.fromkeys(extra_tokens) if t])
    return fast


def _esc(text: str) -> str:
    """How ``text`` appears inside a JSON string (react tool calls)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def macro_tokens(max_turns: tuple[int, ...] = (4, 5, 6, 8, 10, 15)) -> list[str]:
    """The teacher's fixed code blocks, strategy keys, tool-call wrappers and scaffold prompts, whole."""
    choices = [tp.Choice(m, t, r, c) for m, t, r, c in itertools.product(tp.MODELS, tp.TEXTS, (True, False),
                                                                          (True, False))]
    fixed = [tp.EXPLORE, tp._write_template()]
    keys = [c.key for c in choices]  # a reply names its strategy by the key alone
    # the glue between the fixed blocks and keys in every snippet the teacher writes (react runs, aide and oneshot
    # scripts)
    snippets = [tp.run_code(c, f, write_template=w) for c in choices[:1] for f in ("val", ".") for w in (True, False)]
    snippets += [tp.whole_script(c, folders) for c in choices[:1] for folders in (("val", "."), (".",))]
    glue: list[str] = []
    pattern = "|".join(re.escape(x) for x in sorted(fixed + keys, key=len, reverse=True))
    for s in snippets:
        glue += [g for g in re.split(pattern, s) if len(g) > 3]
    blocks = fixed + glue
    out = blocks + [_esc(b) for b in blocks]
    out += ['<tool_call>{"name": "python", "arguments": {"code": "', '"}}</tool_call>',
            '<tool_call>{"name": "score", "arguments": {}}</tool_call>', "<think>", "</think>\n", "<answer>",
            "</answer>", "```python\n", "```", "plan: "]
    out += keys
    out += [prompts.AIDE_SYSTEM, prompts.ONESHOT_SYSTEM] + [prompts.react_system(n) for n in max_turns]
    return [t for t in dict.fromkeys(out) if t]
