"""``tiny``: the one small model that ``hf:tiny``, ``train sft|grpo --model tiny`` and ``sandmle bench learn`` share
— everything about it in this package: the network (:mod:`.model`), the tokenizer and its macro tokens
(:mod:`.tokenizer`), what the tokenizer is trained on (:mod:`.corpus`) and its training recipe (:mod:`.recipe`).
The ``hf`` policy runs it (``load_policy`` resolves ``hf:tiny`` here); training reads its recipe.

What makes a one-million-parameter model learnable on a CPU in minutes (measured in ``bench learn``;
docs/benchmarks.md "Miniature reproduction"):

- a Qwen3 config of hidden 128 and 2 layers initialised with std 1/sqrt(hidden): at the default 0.02 the frozen
  tied head caps logits near 2.6 and a LoRA-only learner plateaus at loss ≈ 5.6;
- a byte-level BPE tokenizer trained on the agents' prompts, templates and format examples plus procedural
  descriptions of the shipped seeds (so task prompts tokenize compactly), with **macro tokens**: the scripted
  teacher's fixed code (the explore snippet, the reference-solution template written to solution.py, the runpy
  glue), each strategy's key (named once per reply, on its code's first line), the tool-call wrappers and the
  scaffold prompts are single tokens. A react turn is then 20–40 tokens instead of ~2,500, and what the model
  learns is the choice of blocks — the strategy (model family, text and media features, validate or not) —
  exactly the decision the teacher's mixed skill leaves open;
- sampling at temperature 0.6 with 96 new tokens per turn and 6 react turns (:data:`TEMPERATURE`, :data:`MAX_NEW_TOKENS`, :data:`MAX_TURNS`);
  the training settings are in :mod:`.recipe`.

``tiny`` resolves to ``<data dir>/models/tiny``, built on first use in a few seconds with no network.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
from pathlib import Path
from typing import Iterator

from ...errors import SandmleError
from .corpus import HELDOUT_SEEDS, default_corpus, seed_descriptions, tokenizer_corpus
from .model import build_tiny_model
from .tokenizer import macro_tokens

__all__ = ["HELDOUT_SEEDS", "HIDDEN", "LAYERS", "MAX_NEW_TOKENS", "MAX_TURNS", "NAME", "SEED", "TEMPERATURE", "VERSION", "VOCAB",
           "build", "build_tiny_model", "default_corpus", "ensure", "is_tiny", "macro_tokens", "path",
           "seed_descriptions", "tokenizer_corpus"]

NAME = "tiny"
HIDDEN = 128
LAYERS = 2
VOCAB = 2048
SEED = 0
#: bump when the model or tokenizer built here changes (an older folder is then refused, never silently reused);
#: 5: the tokenizer no longer reads the held-out seeds' descriptions (issue #34)
VERSION = 5
#: the react turn budget the recipe trains and evaluates with
MAX_TURNS = 6
#: how an ``hf:tiny`` policy samples when its spec does not say
TEMPERATURE = 0.6
MAX_NEW_TOKENS = 96


def build(out_dir: str | Path) -> Path:
    """Build the tiny model into ``out_dir``: random init, the tokenizer with its macro tokens."""
    out = build_tiny_model(out_dir, corpus=tokenizer_corpus(), hidden=HIDDEN, layers=LAYERS,
                           vocab_size=VOCAB, seed=SEED, extra_tokens=macro_tokens(), init_std=HIDDEN ** -0.5)
    meta = json.loads((out / "sandmle.json").read_text())
    (out / "sandmle.json").write_text(json.dumps({**meta, "recipe": VERSION}, indent=2))
    return out


def is_tiny(model: str | Path | None) -> bool:
    """``tiny`` itself, or a model folder made from it (its ``sandmle.json`` carries this recipe's version: e.g.
    ``bench learn``'s instruct base, tiny with a first stage merged in) — both take tiny's training recipe."""
    if model is None:
        return False
    if str(model) == NAME:
        return True
    meta = Path(model).expanduser() / "sandmle.json"
    try:
        return json.loads(meta.read_text()).get("recipe") == VERSION
    except (OSError, ValueError):
        return False


def path(data_dir: str | Path) -> Path:
    return Path(data_dir) / "models" / NAME


def ensure(data_dir: str | Path) -> Path:
    """``<data dir>/models/tiny``, built on first use (atomically, and once even under concurrent callers)."""
    target = path(data_dir)
    with _locked(target.parent / f".{NAME}.lock"):
        if not (target / "config.json").is_file():
            tmp = target.with_name(f".{NAME}.building")
            shutil.rmtree(tmp, ignore_errors=True)
            build(tmp)
            tmp.rename(target)
    meta_file = target / "sandmle.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    if meta.get("recipe") != VERSION:
        raise SandmleError(
            f"{target} was built by an older recipe (recipe {meta.get('recipe', '?')}, this one {VERSION}: another "
            "network or a tokenizer trained on other text)", hint=f"move it away (mv {target} {target}.old); it is rebuilt on next use")
    return target


@contextlib.contextmanager
def _locked(lock_file: Path) -> Iterator[None]:
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
