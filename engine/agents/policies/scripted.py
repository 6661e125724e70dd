"""The scripted expert: a deterministic policy that fills the reference-solution templates, with a skill level.

It reads nothing but its messages, as a model would: the first react turn explores the data (the observation is a
JSON summary: task kind, modality, sizes); later turns parse their own earlier ``<think>`` plans and the score
tool's observations. With probability ``skill`` it plans like an expert (the reference's strongest strategy and a
second candidate suited to the modality — or the ``candidates`` it is given — all tried on the validation split, the
better one kept by the score tool's numbers); otherwise it
commits to a random strategy — possibly a poor one — without checking. Same messages and seed, same reply.

It writes every reply format a scaffold can ask for (:data:`engine.agents.scaffolds.REPLIES`): ``tool_calls`` (one
``<tool_call>`` per turn, as in react), ``staged_scripts`` (a whole script for the draft / debug / improve stage the
prompt names, as in aide) and ``script`` (one whole script, as in oneshot). Which one it learns from the scaffold
it plays in (:meth:`ScriptedPolicy.in_scaffold`, called by every episode), never from the prompt's wording.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re

from store.trajectories import Turn

from ..format import answer_text, tool_call_text
from ..policy import Action, PolicyError
from ..templates import EXPLORE, MODELS, TEXTS, Choice, run_code, whole_script

EXPERT = Choice("blend", "words+chars", True, True)
#: the expert's second candidate per modality
SECOND = {"text": Choice("linear", "words+chars", True, True), "tabular": Choice("boosted", "words", True, True),
          "image": Choice("boosted", "words", True, True), "timeseries": Choice("boosted", "words", True, True),
          "audio": Choice("boosted", "words", True, True)}
#: a plan names its candidates in words (Choice.words), separated by "; "
_PLAN = re.compile(r"plan: ([a-z+ ;]+)\.")
_SUMMARY = re.compile(r"SUMMARY (\{.*\})")
_STRATEGY = re.compile(r"STRATEGY = '([\w/+-]+)'")
_VAL = "os.chdir('val')"


def _score_of(obs: str) -> tuple[float | None, bool]:
    m = re.match(r"validation \w+ = ([-+0-9.eE]+|nan|inf) \((lower|higher) is better", obs)
    if not m:
        return None, False
    return float(m.group(1)), m.group(2) == "lower"


class ScriptedPolicy:
    def __init__(self, skill: float = 1.0, seed: int = 0, strategy: str | None = None,
                 candidates: str | None = None):
        if not 0.0 <= skill <= 1.0:
            raise PolicyError(f"scripted policy: skill must lie in [0, 1], got {skill}")
        if strategy is not None and candidates is not None:
            raise PolicyError("scripted policy: give strategy= (one, never checked) or candidates= (several, "
                              "checked on the validation split), not both")
        self.fixed: Choice | None = None
        #: the expert's plan made explicit: these strategies, each tried on the validation split, the better kept
        self.candidates: list[Choice] | None = None
        if candidates is not None:
            try:
                self.candidates = [Choice.parse(k) for k in candidates.split(":")]
            except ValueError:
                raise PolicyError(f"scripted policy: candidates={candidates!r}: give strategies "
                                  "model/text/rich|plain/chars|nochars separated by ':'") from None
            if len(self.candidates) < 2:
                raise PolicyError(f"scripted policy: candidates={candidates!r}: give at least two, separated by ':'")
        if strategy is not None:
            try:
                self.fixed = Choice.parse(strategy) if "/" in strategy else Choice(strategy, "words", False, False)
                if self.fixed.model not in MODELS:
                    raise ValueError(strategy)
            except ValueError:
                raise PolicyError(f"scripted policy: unknown strategy {strategy!r}; give a model "
                                  f"({', '.join(MODELS)}) or model/text/rich|plain/chars|nochars") from None
        self.skill, self.seed, self.strategy = skill, seed, strategy
        self.name = (f"scripted:skill={skill:g}" + (f",strategy={strategy}" if strategy else "")
                     + (f",candidates={candidates}" if candidates else ""))
        #: the reply format of the scaffold it plays in (set by :meth:`in_scaffold`)
        self.reply: str | None = None

    def in_scaffold(self, scaffold: str, reply: str) -> "ScriptedPolicy":
        """This policy playing in ``scaffold``, whose replies are ``reply`` (a copy: one policy object may play in
        several episodes at once)."""
        if reply not in REPLY_WRITERS:
            raise PolicyError(f"scripted policy: scaffold {scaffold!r} asks for {reply!r} replies; it writes "
                              f"{', '.join(REPLY_WRITERS)}")
        playing = copy.copy(self)
        playing.reply = reply
        return playing

    # ------------------------------------------------------------------ decisions
    def _rng(self, messages: list[Turn], rng_seed: int | None) -> random.Random:
        task = next((m.text for m in messages if m.role == "user"), "")
        episode = (rng_seed // 1000) if rng_seed is not None else 0  # scaffolds pass episode_seed*1000 + turn
        return random.Random(f"{self.seed}:{episode}:{hashlib.sha256(task.encode()).hexdigest()[:16]}")

    def plan(self, modality: str, rng: random.Random) -> list[Choice]:
        if self.fixed is not None:
            return [self.fixed]
        if self.candidates is not None and rng.random() < self.skill:
            return list(self.candidates)
        if self.candidates is None and rng.random() < self.skill:
            return [EXPERT, SECOND.get(modality, SECOND["tabular"])]
        return [Choice(rng.choice(MODELS), rng.choice(TEXTS), rng.random() < 0.5, rng.random() < 0.5)]

    # ------------------------------------------------------------------ the policy interface
    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        if self.reply is None:
            raise PolicyError("scripted policy: no scaffold to play in (an episode says which: in_scaffold)")
        write = getattr(self, REPLY_WRITERS[self.reply])
        return Action(text=write(messages, self._rng(messages, rng_seed)), usage={"calls": 1})

    # ------------------------------------------------------------------ react
    def _react(self, messages: list[Turn], rng: random.Random) -> str:
        budget_m = re.search(r"at most (\d+) turns", messages[0].text)
        budget = int(budget_m.group(1)) if budget_m else 15
        has_val = any(m.role == "user" and "# Validation" in m.text for m in messages)
        history: list[tuple[str, str]] = []  # each earlier turn of mine with the observation that followed
        for i, turn in enumerate(messages):
            if turn.role == "assistant":
                nxt = messages[i + 1].text if i + 1 < len(messages) and messages[i + 1].role == "tool" else ""
                history.append((turn.text, nxt))
        if not history:
            return tool_call_text("python", {"code": EXPLORE}, "Look at the data first: target, task, modality.")
        summary: dict = {}
        plan: list[Choice] | None = None
        wrote = False
        val_runs: list[tuple[str, bool]] = []  # (strategy key, ran ok)
        scores: list[tuple[str, float, bool]] = []  # (strategy key, value, lower is better)
        finals: list[tuple[str, bool]] = []
        for text, obs in history:
            m = _SUMMARY.search(obs)
            if m:
                try:
                    summary = json.loads(m.group(1))
                except json.JSONDecodeError:
                    pass
            pm = _PLAN.search(text)
            if pm and plan is None:
                plan = [Choice.from_words(k) for k in pm.group(1).split(";")]
            sm = _STRATEGY.search(text)
            ok = obs.startswith("[exit 0")
            wrote = wrote or ("open('solution.py', 'w')" in text and ok)
            if sm and _VAL in text:
                val_runs.append((sm.group(1), ok))
            elif sm:
                finals.append((sm.group(1), ok))
            value, lower = _score_of(obs)
            if '"name": "score"' in text and value is not None and val_runs:
                scores.append((val_runs[-1][0], value, lower))
        turns_left = budget - len(history)
        if finals and finals[-1][1]:
            return answer_text("submission.csv is written", "The submission is written; finish.")
        if finals:  # the final run failed: fall back to simpler models
            tried = {f[0] for f in finals}
            for fallback in (Choice("linear", "words", False, False), Choice("constant", "words", False, False)):
                if fallback.key not in tried and turns_left > 1:
                    return self._run(fallback, ".", wrote, f"The final run failed; fall back to {fallback.model}.")
            return answer_text("no valid submission", "Nothing worked; stop.")
        if plan is None:
            modality = summary.get("modality", "tabular")
            plan = self.plan(modality, rng)
            # a plan of several candidates is written down (later turns read it back); one strategy is named only
            # in the code it runs (STRATEGY = '...'), the one place every scaffold's reply names it
            named = f"plan: {'; '.join(c.words for c in plan)}. " if len(plan) > 1 else ""
            think = (f"{named}The task is {summary.get('task', '?')} on {modality} data with "
                     f"{summary.get('rows', '?')} rows.")
            if has_val and len(plan) > 1 and turns_left > 3:
                return self._run(plan[0], "val", wrote, think + " Try the first candidate on val/ first.")
            return self._run(plan[0], ".", wrote, think + " Train on all rows and write submission.csv.")
        last_text, last_obs = history[-1]
        if _VAL in last_text and last_obs.startswith("[exit 0") and turns_left > 2:
            return tool_call_text("score", {}, "Score the validation predictions.")
        validated = {v[0] for v in val_runs}
        todo = [c for c in plan if c.key not in validated]
        if len(plan) > 1 and todo and turns_left > 3:
            return self._run(todo[0], "val", wrote, f"Next candidate: {todo[0].words}.")
        if scores:
            lower = scores[0][2]
            best = (min if lower else max)(scores, key=lambda s: s[1])[0]
            choice = Choice.parse(best)
            think = f"Best on validation: {choice.words}. Train it on all training rows."
        else:
            ok_runs = [v[0] for v in val_runs if v[1]]
            choice = Choice.parse(ok_runs[0]) if ok_runs else plan[0]
            think = f"Train {choice.words} on all training rows."
        return self._run(choice, ".", wrote, think)

    @staticmethod
    def _run(choice: Choice, folder: str, wrote: bool, think: str) -> str:
        return tool_call_text("python", {"code": run_code(choice, folder, write_template=not wrote)}, think)

    # ------------------------------------------------------------------ aide and oneshot
    def _aide(self, messages: list[Turn], rng: random.Random) -> str:
        prompt = messages[-1].text
        plan = self.plan(_modality_of(prompt), rng)
        if "# Stage: debug" in prompt:
            robust = Choice("linear", "words", False, False)
            return _script_reply(whole_script(robust), "The script failed; use a robust linear model.")
        if "# Stage: improve" in prompt:
            m = _STRATEGY.search(prompt)
            current = Choice.parse(m.group(1)) if m else plan[0]
            if rng.random() < self.skill:
                better = EXPERT if current != EXPERT else SECOND.get(_modality_of(prompt), SECOND["tabular"])
                return _script_reply(whole_script(better), "Switch to a stronger strategy.")
            other = Choice(rng.choice(MODELS), rng.choice(TEXTS), rng.random() < 0.5, rng.random() < 0.5)
            return _script_reply(whole_script(other), "Try another strategy.")
        drafts = prompt.count("(draft")
        choice = plan[drafts] if drafts < len(plan) else Choice(rng.choice(MODELS), rng.choice(TEXTS), True, True)
        return _script_reply(whole_script(choice), f"Draft {drafts + 1}.")

    def _oneshot(self, messages: list[Turn], rng: random.Random) -> str:
        plan = self.plan(_modality_of(messages[-1].text), rng)
        return _script_reply(whole_script(plan[0], (".",)), "One script: train on all rows and write submission.csv.")


#: reply format (:data:`engine.agents.scaffolds.REPLIES`) → the method that writes it
REPLY_WRITERS = {"tool_calls": "_react", "staged_scripts": "_aide", "script": "_oneshot"}


def _modality_of(prompt: str) -> str:
    """The modality a prompt's file listing or description suggests."""
    low = prompt.lower()
    if re.search(r"\.(png|jpe?g)\b|images?/|image", low):
        return "image"
    if re.search(r"\.wav\b|audio|recording", low):
        return "audio"
    if re.search(r"\.npy\b|time series|signal", low):
        return "timeseries"
    if re.search(r"\btext\b|sentence|review|comment|essay", low):
        return "text"
    return "tabular"


def _script_reply(code: str, think: str) -> str:
    return f"<think>{think}</think>\n```python\n{code}```"
