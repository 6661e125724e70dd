"""Small causal LMs built from scratch, locally: random init + a byte-level BPE tokenizer trained in seconds on a corpus the caller
gives (the agents' prompts and templates: :func:`engine.agents.policies.tiny_model.default_corpus`).

A Qwen3 config (not Qwen2: AutoTokenizer would swap a Qwen2 folder's tokenizer for Qwen2Tokenizer and change the
ids). The tokenizer defines the plain chat format's special tokens (``<|system|>``, ``<|user|>``,
``<|assistant|>``, ``<|tool|>``, ``<|end|>``) and ``<|pad|>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .loading import quiet_transformers

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


def build_tiny_model(out_dir: str | Path, *, corpus: list[str], hidden: int = 256, layers: int = 4,
                     heads: int = 4, kv_heads: int = 2, vocab_size: int = 2048, seed: int = 0,
                     extra_tokens: list[str] | None = None, init_std: float | None = None) -> Path:
    """Build, save and return the folder of a random-init Qwen3 model with a locally trained tokenizer."""
    import torch  # heavy optional dependency: loaded only when used
    from transformers import AutoModelForCausalLM, Qwen3Config  # heavy optional dependency: loaded only when used

    quiet_transformers()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(corpus, vocab_size, extra_tokens)
    torch.manual_seed(seed)
    # init_std ~ 1/sqrt(hidden) lets a LoRA-only learner reach confident logits through the frozen tied head
    init: dict[str, Any] = {"initializer_range": float(init_std)} if init_std else {}
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=hidden // heads,
        max_position_embeddings=8192, tie_word_embeddings=True,
        **init,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "sandmle.json").write_text(json.dumps({"kind": "tiny", "hidden": hidden, "layers": layers,
                                                  "heads": heads, "kv_heads": kv_heads, "seed": seed,
                                                  "vocab_size": len(tokenizer)}, indent=2))
    return out
