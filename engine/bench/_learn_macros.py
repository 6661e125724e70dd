"""Macro tokens for the miniature reproduction: the scripted teacher's fixed code (the explore snippet, the
reference-solution template written to solution.py, the runpy glue), each strategy's globals and marker, the
tool-call wrappers and the scaffold prompts become single tokens of the tiny tokenizer. A few-million-parameter
model on two CPU cores then writes a whole turn in a few dozen tokens, and what it learns is the choice of blocks —
the strategy (model family, text and media features, validate or not) — which is exactly the decision the
teacher's mixed skill leaves open."""

from __future__ import annotations

import itertools
import json
import re

from ..agents import prompts
from ..agents.policies import templates as tp
from ..agents.policies.templates import MODELS, TEXTS, Choice


def _esc(text: str) -> str:
    """How ``text`` appears inside a JSON string (react tool calls)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _choices():
    return [Choice(m, t, r, c) for m, t, r, c in itertools.product(MODELS, TEXTS, (True, False), (True, False))]


def macro_tokens(max_turns: tuple[int, ...] = (4, 5, 6, 8, 10, 15)) -> list[str]:
    choices = _choices()
    fixed = [tp.EXPLORE, tp._write_template()]
    per_choice = [s for c in choices for s in (f"# strategy: {c.key}\n", c.globals_literal())]
    # the glue between the fixed blocks in every snippet the teacher writes
    snippets = [tp.run_code(c, f, write_template=w) for c in choices[:1] for f in ("val", ".") for w in (True, False)]
    snippets += [tp.whole_script(c) for c in choices[:1]]
    glue: list[str] = []
    pattern = "|".join(re.escape(x) for x in sorted(fixed + per_choice, key=len, reverse=True))
    for s in snippets:
        glue += [g for g in re.split(pattern, s) if len(g) > 3]
    blocks = fixed + per_choice + glue
    out = blocks + [_esc(b) for b in blocks]
    out += ['<tool_call>{"name": "python", "arguments": {"code": "', '"}}</tool_call>',
            '<tool_call>{"name": "score", "arguments": {}}</tool_call>', "<think>", "</think>\n", "<answer>",
            "</answer>", "```python\n", "```", "plan: "]
    out += [c.key for c in choices]
    out += [prompts.AIDE_SYSTEM, prompts.ONESHOT_SYSTEM] + [prompts.react_system(n) for n in max_turns]
    return [t for t in dict.fromkeys(out) if t]
