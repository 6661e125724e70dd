"""tiny's network, built from scratch locally: a Qwen3 config (not Qwen2: AutoTokenizer would swap a Qwen2
folder's tokenizer for Qwen2Tokenizer and change the ids), random init, saved with the tokenizer trained on a corpus
the caller gives (:mod:`.tokenizer`; tiny's own corpus: :mod:`.corpus`). Tests build smaller ones the same way."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ...models.loading import quiet_transformers
from .tokenizer import train_tokenizer


def corpus_digest(corpus: list[str]) -> str:
    """The sha256 of what a tokenizer was trained on (recorded in ``sandmle.json``: which text it saw)."""
    h = hashlib.sha256()
    for text in corpus:
        h.update(hashlib.sha256(text.encode("utf-8")).digest())
    return h.hexdigest()


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
                                                  "vocab_size": len(tokenizer), "corpus": corpus_digest(corpus),
                                                  "corpus_texts": len(corpus)}, indent=2))
    return out
