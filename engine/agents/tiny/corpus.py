"""What tiny's tokenizer is trained on (:func:`tokenizer_corpus`): the agents' prompts, the scripted teacher's
templates and format examples (:func:`default_corpus`), and procedural descriptions of the shipped *training* seeds
(:func:`seed_descriptions`), so task prompts tokenize compactly.

Nothing held out is read here: no stored environment, no description of a held-out seed (:data:`HELDOUT_SEEDS`,
the seeds ``sandmle bench learn`` evaluates on as unseen), nothing of the real held-out suite (engine.realdata is
never imported). ``tests/test_tiny.py`` checks it on the exact list the tokenizer is trained on."""

from __future__ import annotations

import numpy as np

from ...seeds.load import SHIPPED_SEEDS, discover
from ...synthesis.blueprint import analyze
from ...synthesis.describe import write_description
from ...synthesis.designer import design
from ...synthesis.grader import grade_spec
from .. import prompts
from .. import templates as tp
from ..format import answer_text, tool_call_text


#: the shipped seeds whose environments the miniature evaluates on as unseen (``bench learn``'s held-out group): their
#: descriptions never train the tokenizer, and a learn plan may hold out only these (engine.bench.learn checks it)
HELDOUT_SEEDS = ("leaf-species", "author-style", "taxi-fare")


def training_seeds() -> list[str]:
    """The ids of the shipped seeds whose text may train the tokenizer: every one but :data:`HELDOUT_SEEDS`."""
    return [s.id for s in discover(SHIPPED_SEEDS) if s.id not in HELDOUT_SEEDS]


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


def seed_descriptions(per_seed: int = 4, seeds: list[str] | None = None) -> list[str]:
    """Procedural environment descriptions of the shipped training seeds (``seeds``: default
    :func:`training_seeds`; offline, deterministic): what task prompts look like, without looking at any stored
    environment."""
    wanted = training_seeds() if seeds is None else list(seeds)
    texts = []
    for seed in discover(SHIPPED_SEEDS):
        if seed.id not in wanted:
            continue
        row = seed.to_row()
        blueprint = analyze(row)
        for k in range(per_seed):
            scenario = design(blueprint, row, np.random.default_rng(k))
            texts.append(write_description(scenario, grade_spec(blueprint, scenario).to_dict()))
    return texts


def tokenizer_corpus() -> list[str]:
    """Exactly what ``tiny``'s tokenizer is trained on."""
    return default_corpus() + seed_descriptions()
