"""The text a tiny model's tokenizer is trained on: the agents' prompts, reference-solution templates and
format examples (so a few-million-parameter model sees whole code blocks as few tokens)."""

from __future__ import annotations

from . import prompts
from .format import answer_text, tool_call_text
from .policies import templates as tpl


def default_corpus() -> list[str]:
    """The project's reference-solution templates, scaffold prompts and format examples."""
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
