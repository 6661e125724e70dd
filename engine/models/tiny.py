"""Tiny causal LMs built locally (random init + a byte-level BPE tokenizer trained in seconds), the loader every
part of the project uses (optionally with a PEFT adapter), and the device pick.

A Qwen3 config (not Qwen2: AutoTokenizer would swap a Qwen2 folder's tokenizer for Qwen2Tokenizer and change the
ids). The tokenizer defines the plain chat format's special tokens (``<|system|>``, ``<|user|>``,
``<|assistant|>``, ``<|tool|>``, ``<|end|>``) and ``<|pad|>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SandmleError

ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
END_TOKEN = "<|end|>"
PAD_TOKEN = "<|pad|>"
SPECIAL_TOKENS = [PAD_TOKEN, END_TOKEN, *ROLE_TOKENS]


def default_corpus() -> list[str]:
    """The project's reference-solution templates, scaffold prompts and format examples."""
    from ..agents import prompts
    from ..agents.format import answer_text, tool_call_text
    from ..agents.policies import templates as tpl

    corpus = [prompts.REACT_SYSTEM, prompts.AIDE_SYSTEM, prompts.ONESHOT_SYSTEM, tpl.EXPLORE, tpl.template_body()]
    for model in tpl.MODELS:
        for text in tpl.TEXTS:
            choice = tpl.Choice(model, text, True, True)
            corpus.append(tool_call_text("python", {"code": tpl.run_code(choice, "val", write_template=False)},
                                         f"plan: {choice.key}. Try it on val/ first."))
            corpus.append(tool_call_text("python", {"code": tpl.run_code(choice, ".", write_template=False)},
                                         f"Train {choice.key} on all training rows."))
    corpus += [tool_call_text("score", {}, "Score the validation predictions."),
               answer_text("submission.csv is written", "The submission is written; finish."),
               "validation accuracy = 0.875 (higher is better; 24 held-out training rows)",
               "[exit 0 · ok · 1.58s]\nwrote submission.csv: 24 rows, mode label, model blend"]
    return corpus


def train_tokenizer(corpus: list[str], vocab_size: int = 2048, extra_tokens: list[str] | None = None):
    """A byte-level BPE tokenizer (``tokenizers``) wrapped as a PreTrainedTokenizerFast. ``extra_tokens`` are added
    whole (matched before BPE, longest first): e.g. frequent code blocks as single tokens (macro-actions)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=END_TOKEN, pad_token=PAD_TOKEN,
                                   bos_token=None, unk_token=None, additional_special_tokens=ROLE_TOKENS)
    if extra_tokens:
        from tokenizers import AddedToken

        fast.add_tokens([AddedToken(t, normalized=False, special=False) for t in dict.fromkeys(extra_tokens) if t])
    return fast


def build_tiny_model(out_dir: str | Path, *, corpus: list[str] | None = None, hidden: int = 256, layers: int = 4,
                     heads: int = 4, kv_heads: int = 2, vocab_size: int = 2048, seed: int = 0,
                     extra_tokens: list[str] | None = None, init_std: float | None = None) -> Path:
    """Build, save and return the folder of a random-init Qwen3 model with a locally trained tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    _quiet()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = train_tokenizer(corpus if corpus is not None else default_corpus(), vocab_size, extra_tokens)
    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=hidden // heads,
        max_position_embeddings=8192, tie_word_embeddings=True,
        # init_std ~ 1/sqrt(hidden) lets a LoRA-only learner reach confident logits through the frozen tied head
        **({"initializer_range": float(init_std)} if init_std else {}),
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


def _quiet() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def pick_device() -> str:
    """``"cuda"`` when a GPU is usable, else ``"cpu"``."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(device: str):
    import torch

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def load_causal_lm(path_or_id: str | Path, *, adapter: str | None = None, device: str | None = None,
                   trainable: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) from a folder or hub id, with an optional PEFT adapter, on ``device`` in eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet()
    device = device or pick_device()
    path = str(path_or_id)
    if (path.startswith((".", "/", "~")) or Path(path).expanduser().exists()) and not Path(path).expanduser().is_dir():
        raise SandmleError(f"cannot load model {path!r}: no such folder")
    path = str(Path(path).expanduser()) if path.startswith("~") else path
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=pick_dtype(device))
    except (OSError, ValueError) as exc:
        raise SandmleError(f"cannot load model {path!r}: {str(exc).splitlines()[0]}") from None
    if adapter:
        from peft import PeftModel

        try:
            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=trainable)
        except (OSError, ValueError) as exc:
            raise SandmleError(f"cannot load adapter {adapter!r}: {str(exc).splitlines()[0]}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    if not trainable:
        model.eval()
    return model, tokenizer
