"""``tiny``: the one small model that ``hf:tiny``, ``train sft|grpo --model tiny`` and ``sandmle bench learn`` share
(a model, not a policy: the ``hf`` policy runs it; it lives here because ``load_policy`` resolves ``hf:tiny``).

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
  the training settings are in :mod:`engine.rl.recipe`.

``tiny`` resolves to ``<data dir>/models/tiny``, built on first use in a few seconds with no network.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np

from ...errors import SandmleError
from ...models.scratch import build_tiny_model
from ...seeds.load import SHIPPED_SEEDS, discover
from ...synthesis.blueprint import analyze
from ...synthesis.describe import write_description
from ...synthesis.designer import design
from ...synthesis.grader import grade_spec
from .. import prompts
from ..format import answer_text, tool_call_text
from . import templates as tp

NAME = "tiny"
HIDDEN = 128
LAYERS = 2
VOCAB = 2048
SEED = 0
#: bump when the model or tokenizer built here changes (an older folder is then refused, never silently reused)
VERSION = 4
#: the react turn budget the recipe trains and evaluates with
MAX_TURNS = 6
#: how an ``hf:tiny`` policy samples when its spec does not say
TEMPERATURE = 0.6
MAX_NEW_TOKENS = 96


def default_corpus() -> list[str]:
    """The project's reference-solution templates, scaffold prompts and format examples."""
    corpus = [prompts.REACT_SYSTEM, prompts.AIDE_SYSTEM, prompts.ONESHOT_SYSTEM, tp.EXPLORE, tp.template_body()]
    for model in tp.MODELS:
        for text in tp.TEXTS:
            choice = tp.Choice(model, text, True, True)
            corpus.append(tool_call_text("python", {"code": tp.run_code(choice, "val", write_template=False)},
                                         f"plan: {choice.key}. Try it on val/ first."))
            corpus.append(tool_call_text("python", {"code": tp.run_code(choice, ".", write_template=False)},
                                         f"Train {choice.key} on all training rows."))
    corpus += [tool_call_text("score", {}, "Score the validation predictions."),
               answer_text("submission.csv is written", "The submission is written; finish."),
               "validation accuracy = 0.875 (higher is better; 24 held-out training rows)",
               "[exit 0 · ok · 1.58s]\nwrote submission.csv: 24 rows, mode label, model blend"]
    return corpus


def seed_descriptions(per_seed: int = 4) -> list[str]:
    """Procedural environment descriptions of every shipped seed (offline, deterministic): what task prompts
    look like, without looking at any stored environment."""
    texts = []
    for seed in discover(SHIPPED_SEEDS):
        row = seed.to_row()
        blueprint = analyze(row)
        for k in range(per_seed):
            scenario = design(blueprint, row, np.random.default_rng(k))
            texts.append(write_description(scenario, grade_spec(blueprint, scenario).to_dict()))
    return texts


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


def build(out_dir: str | Path) -> Path:
    """Build the tiny model into ``out_dir``: random init, the tokenizer with its macro tokens."""
    out = build_tiny_model(out_dir, corpus=default_corpus() + seed_descriptions(), hidden=HIDDEN, layers=LAYERS,
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
            f"{target} was built by an older recipe (hidden {meta.get('hidden', '?')}, {meta.get('layers', '?')} "
            "layers) that does not learn", hint=f"move it away (mv {target} {target}.old); it is rebuilt on next use")
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
