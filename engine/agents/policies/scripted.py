"""The scripted expert: a deterministic policy that fills generic solution templates, with a skill level.

It reads nothing but its messages, as a model would: the first react turn explores the data (the observation is a
JSON summary: task kind, modality, sizes), later turns parse their own earlier ``<think>`` plans and the score
tool's observations. With probability ``skill`` it plans like an expert (the strategy ranking that suits the
modality, compares two candidates on the validation split and keeps the better); otherwise it commits to a random
strategy, possibly a poor one, without checking. The same messages and seed give the same reply.

Formats: ``react`` (one ``<tool_call>`` per turn), ``aide`` (draft / debug / improve whole scripts) and ``oneshot``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from ..format import answer_text, tool_call_text
from ..policy import Action, Message
from ..score_tool import VAL_SUBMISSION
from .solution_code import STRATEGIES, explore_script, script

#: the expert's ranking per modality (first = preferred)
EXPERT = {
    "tabular": ["boosting", "forest", "linear"],
    "text": ["linear", "forest", "boosting"],
    "image": ["forest", "linear", "knn"],
    "timeseries": ["forest", "boosting", "linear"],
    "audio": ["forest", "boosting", "linear"],
}
_PLAN = re.compile(r"plan: ([a-z,]+)")
_SUMMARY = re.compile(r"SUMMARY (\{.*\})")
_STRATEGY = re.compile(r"# strategy: (\w+) \((\w+)\)")


def _score_of(obs: str) -> tuple[float | None, bool]:
    m = re.match(r"validation \w+ = ([-+0-9.eE]+|nan|inf) \((lower|higher) is better", obs)
    if not m:
        return None, False
    return float(m.group(1)), m.group(2) == "lower"


class ScriptedPolicy:
    def __init__(self, skill: float = 1.0, seed: int = 0, strategy: str | None = None):
        if not 0.0 <= skill <= 1.0:
            from ..policy import PolicyError

            raise PolicyError(f"scripted policy: skill must lie in [0, 1], got {skill}")
        if strategy is not None and strategy not in STRATEGIES:
            from ..policy import PolicyError

            raise PolicyError(f"scripted policy: unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
        self.skill = skill
        self.seed = seed
        self.strategy = strategy
        self.name = f"scripted:skill={skill:g}" + (f",strategy={strategy}" if strategy else "")

    # ------------------------------------------------------------------ decisions
    def _rng(self, messages: list[Message], rng_seed: int | None) -> random.Random:
        task = next((m.content for m in messages if m.role == "user"), "")
        episode = (rng_seed // 1000) if rng_seed is not None else 0  # scaffolds pass episode_seed*1000 + turn
        key = f"{self.seed}:{episode}:{hashlib.sha256(task.encode()).hexdigest()[:16]}"
        return random.Random(key)

    def plan(self, modality: str, rng: random.Random) -> list[str]:
        if self.strategy:
            return [self.strategy]
        if rng.random() < self.skill:
            return EXPERT.get(modality, EXPERT["tabular"])[:2]
        return [rng.choice(STRATEGIES)]

    # ------------------------------------------------------------------ the policy interface
    def act(self, messages: list[Message], *, rng_seed: int | None = None) -> Action:
        system = messages[0].content if messages and messages[0].role == "system" else ""
        rng = self._rng(messages, rng_seed)
        if "<tool_call>" in system:
            text = self._react(messages, rng)
        elif "tree search" in system:
            text = self._aide(messages, rng)
        else:
            text = self._oneshot(messages, rng)
        return Action(text=text, usage={"calls": 1})

    # ------------------------------------------------------------------ react
    def _react(self, messages: list[Message], rng: random.Random) -> str:
        system = messages[0].content
        budget_m = re.search(r"at most (\d+) turns", system)
        budget = int(budget_m.group(1)) if budget_m else 15
        has_val = any(m.role == "user" and "# Validation" in m.content for m in messages)
        # pair each of my earlier turns with the observation that followed it
        history: list[tuple[str, str]] = []
        for i, m in enumerate(messages):
            if m.role == "assistant":
                nxt = messages[i + 1].content if i + 1 < len(messages) and messages[i + 1].role == "tool" else ""
                history.append((m.content, nxt))
        if not history:
            return tool_call_text("python", {"code": explore_script()},
                                  "Look at the data first: columns, target, task kind, modality.")
        summary: dict = {}
        plan: list[str] | None = None
        val_runs: list[tuple[str, bool]] = []  # (strategy, ran ok)
        scores: list[tuple[str, float, bool]] = []  # (strategy, value, lower is better)
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
                plan = pm.group(1).split(",")
            sm = _STRATEGY.search(text)
            ok = obs.startswith("[exit 0")
            if sm and "solve('val'" in text:
                val_runs.append((sm.group(1), ok))
            elif sm and "solve('.'" in text:
                finals.append((sm.group(1), ok))
            value, lower = _score_of(obs)
            if '"name": "score"' in text and value is not None and val_runs:
                scores.append((val_runs[-1][0], value, lower))
        last_text, last_obs = history[-1]
        turns_left = budget - len(history)
        if finals and finals[-1][1]:
            return answer_text("submission.csv is written", "The submission is written; finish.")
        if finals:  # the final run failed: fall back to simpler models
            tried = {f[0] for f in finals}
            for fallback in ("linear", "constant"):
                if fallback not in tried and turns_left > 1:
                    return self._final(fallback, f"The final run failed; fall back to {fallback}.")
            return answer_text("no valid submission", "Nothing worked; stop.")
        if plan is None:
            modality = summary.get("modality", "tabular")
            plan = self.plan(modality, rng)
            think = (f"plan: {','.join(plan)}. The task is {summary.get('task', '?')} on {modality} data with "
                     f"{summary.get('rows', '?')} rows.")
            if has_val and len(plan) > 1 and turns_left > 3:
                return self._val(plan[0], think + f" Fit {plan[0]} on val/train.csv first.")
            return self._final(plan[0], think + " Train on all rows and write submission.csv.")
        if "solve('val'" in last_text and last_obs.startswith("[exit 0") and turns_left > 2:
            return tool_call_text("score", {}, "Score the validation predictions.")
        tried = [v[0] for v in val_runs]
        todo = [p for p in plan if p not in tried]
        if todo and turns_left > 3:
            return self._val(todo[0], f"Next candidate: {todo[0]}.")
        if scores:
            lower = scores[0][2]
            choice = (min if lower else max)(scores, key=lambda s: s[1])[0]
            think = f"Best on validation: {choice}. Train it on all training rows."
        else:
            ok_runs = [v[0] for v in val_runs if v[1]]
            choice = ok_runs[0] if ok_runs else plan[0]
            think = f"Train {choice} on all training rows."
        return self._final(choice, think)

    @staticmethod
    def _val(strategy: str, think: str) -> str:
        return tool_call_text("python", {"code": script(strategy, [("val", VAL_SUBMISSION)])}, think)

    @staticmethod
    def _final(strategy: str, think: str) -> str:
        return tool_call_text("python", {"code": script(strategy, [(".", "submission.csv")])}, think)

    # ------------------------------------------------------------------ aide and oneshot
    def _aide(self, messages: list[Message], rng: random.Random) -> str:
        prompt = messages[-1].content
        both = [("val", VAL_SUBMISSION), (".", "submission.csv")]
        modality = _modality_of(prompt)
        plan = self.plan(modality, rng)
        if "# Stage: debug" in prompt:
            return _script_reply(script("linear", both), "The script failed; use a robust linear model.")
        if "# Stage: improve" in prompt:
            m = _STRATEGY.search(prompt)
            strategy = m.group(1) if m else plan[0]
            if self.skill >= 0.5 or rng.random() < self.skill:
                return _script_reply(script(strategy, both, size="large"), f"Make {strategy} larger.")
            return _script_reply(script(rng.choice(STRATEGIES), both), "Try something else.")
        drafts = prompt.count("(draft")
        strategy = plan[min(drafts, len(plan) - 1)] if drafts < len(plan) else rng.choice(STRATEGIES)
        return _script_reply(script(strategy, both), f"Draft {drafts + 1}: {strategy}.")

    def _oneshot(self, messages: list[Message], rng: random.Random) -> str:
        prompt = messages[-1].content
        plan = self.plan(_modality_of(prompt), rng)
        return _script_reply(script(plan[0], [(".", "submission.csv")]), f"One shot with {plan[0]}.")


def _modality_of(prompt: str) -> str:
    """The modality a prompt's file listing suggests (media folders) or its description names."""
    low = prompt.lower()
    if re.search(r"\.(png|jpe?g)\b|images?/", low):
        return "image"
    if re.search(r"\.wav\b|audio", low):
        return "audio"
    if re.search(r"\.npy\b|time series|signal", low):
        return "timeseries"
    if re.search(r"\btext\b|sentence|review|comment|essay", low):
        return "text"
    return "tabular"


def _script_reply(code: str, think: str) -> str:
    return f"<think>{think}</think>\n```python\n{code}```"
