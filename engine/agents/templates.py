"""What the scripted expert writes, built on the synthesis engineer's reference-solution templates
(:mod:`engine.synthesis.solutions`) — one set of templates for the verifier's ladder and for the agent.

The template body (generic: id, targets, task and modality are read from the files) is written once to
``solution.py``; each run then only fills the strategy (model, text features, rich media features, character
features; bagging always) through one ``runpy`` global, ``STRATEGY``, set on the snippet's first line
(``STRATEGY = 'blend/words+chars/rich/chars'``) — the one place a reply names its strategy, in every scaffold
alike: for the tiny model the choice is one token after the same token, never a copy of an earlier mention (a
one-million-parameter model did not learn to copy a plan into its code). The explore snippet prints a one-line
JSON summary of the data for the policy to read (at most 8 of the columns to predict, then how many more: a
22-class task listed 22 names no training task has, and the tiny model lost its reply format after reading them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..synthesis.solutions import Strategy, render_solution

MODELS = ("constant", "linear", "boosted", "blend")
TEXTS = ("words", "words+chars")


@dataclass(frozen=True)
class Choice:
    """One strategy, written ``model/text/rich|plain/chars|nochars`` in plans and code markers."""

    model: str = "blend"
    text: str = "words+chars"
    rich: bool = True
    chars: bool = True

    @property
    def key(self) -> str:
        return f"{self.model}/{self.text}/{'rich' if self.rich else 'plain'}/{'chars' if self.chars else 'nochars'}"

    @property
    def words(self) -> str:
        """The key as a ``<think>`` names it, in words (``blend words+chars rich chars``): never the key's own token,
        which only code writes — tiny, seeing one key token in plans and in code, continued code with the plan's
        punctuation and plans with code (``STRATEGY = 'KEY.</think>``)."""
        return self.key.replace("/", " ")

    @classmethod
    def from_words(cls, words: str) -> "Choice":
        return cls.parse("/".join(words.split()))

    @classmethod
    def parse(cls, key: str) -> "Choice":
        model, text, rich, chars = key.split("/")
        if model not in MODELS or text not in TEXTS:
            raise ValueError(f"bad strategy {key!r}")
        return cls(model, text, rich == "rich", chars == "chars")

    def strategy(self) -> Strategy:
        return Strategy(model=self.model, text=self.text, rich=self.rich, chars=self.chars, bag=True)

    def line(self) -> str:
        """The first line of every snippet that runs the strategy: ``STRATEGY = 'key'`` — the one place a reply
        names it (solution.py's first lines unpack it)."""
        return f"STRATEGY = {self.key!r}\n"


#: solution.py's first lines: the ``STRATEGY`` key unpacked into the globals the reference solution reads
UNPACK = ("STRATEGY_MODEL, STRATEGY_TEXT, _RICH, _CHARS = STRATEGY.split('/')\n"
          "STRATEGY_RICH, STRATEGY_CHARS, STRATEGY_BAG = _RICH == 'rich', _CHARS == 'chars', True\n")


def template_body() -> str:
    """The reference solution with its strategy header replaced by :data:`UNPACK` (the strategy arrives as the
    ``STRATEGY`` global)."""
    s = Strategy()
    text = render_solution(s)
    body = UNPACK + text.split(s.header(), 1)[1]
    if "'''" in body or body.endswith("\\"):
        raise RuntimeError("the solution template cannot be embedded as a raw string")
    return body


def _write_template() -> str:
    return f"open('solution.py', 'w').write(r'''{template_body()}''')\n"


def run_code(choice: Choice, folder: str, *, write_template: bool) -> str:
    """A python-tool snippet: (write solution.py, then) run it with ``choice`` in ``folder`` ("val" or ".")."""
    head = choice.line() + (_write_template() if write_template else "")
    if folder == ".":
        return head + "import runpy\nrunpy.run_path('solution.py', init_globals=dict(STRATEGY=STRATEGY), " \
                      "run_name='__main__')\n"
    return head + (f"import os, runpy\nos.chdir({folder!r})\nrunpy.run_path('../solution.py', "
                   f"init_globals=dict(STRATEGY=STRATEGY), run_name='__main__')\n")


def whole_script(choice: Choice, folders: tuple[str, ...] = ("val", ".")) -> str:
    """A standalone script (aide, oneshot): write solution.py and run it in each folder."""
    return (choice.line() + _write_template() + "import os, runpy\nhere = os.getcwd()\n"
            f"for folder in {folders!r}:\n    os.chdir(folder)\n"
            "    runpy.run_path(os.path.join(here, 'solution.py'), init_globals=dict(STRATEGY=STRATEGY), "
            "run_name='__main__')\n    os.chdir(here)\n")


EXPLORE = r'''import json, os
import pandas as pd
sample = pd.read_csv("sample_submission.csv", nrows=5)
test = pd.read_csv("test.csv")
train = pd.read_csv("train.csv")
idc = next((c for c in sample.columns if c in test.columns), sample.columns[0])
pred = [c for c in sample.columns if c != idc]
targets = [c for c in train.columns if c not in test.columns]
feats = [c for c in test.columns if c != idc]
text = [c for c in feats if test[c].dtype == object and test[c].astype(str).str.count(" ").mean() >= 3]
media = [c for c in feats if test[c].dtype == object and test[c].astype(str).str.contains(r"\.(png|npy|wav)$").all()]
modality = "text" if text else "tabular"
for c in media:
    first = str(test[c].iloc[0])
    modality = "image" if first.endswith(".png") else "audio" if first.endswith(".wav") else "timeseries"
task = "proba" if [p.lower() for p in pred] != [t.lower() for t in targets] else ("value" if pd.api.types.is_float_dtype(train[targets[0]]) else "label")
shown = pred[:8] + ([f"+{len(pred) - 8} more"] if len(pred) > 8 else [])
print("SUMMARY " + json.dumps({"rows": len(train), "test_rows": len(test), "id": idc, "targets": targets,
      "predict": shown, "task": task, "modality": modality, "features": len(feats), "text": text, "media": media,
      "missing": round(float(train[feats].isna().mean().mean()) if feats else 0.0, 3)}))
'''
