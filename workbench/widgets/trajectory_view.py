"""A rollout turn by turn: each turn's text, the code it ran and the observation, then the grade report and
the reward breakdown. Two side by side compare rollouts of one group."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static


MEDALS = (("gold", "gold_medal"), ("silver", "silver_medal"), ("bronze", "bronze_medal"),
          ("above median", "above_median"))


def medal_of(grade: dict[str, Any]) -> str:
    """The best medal of a grade report (MLE-bench's field names, or the short ones)."""
    for name, field in MEDALS:
        if grade.get(field) or grade.get(name.replace(" ", "_")):
            return name
    return "no medal"


def breakdown_lines(breakdown: dict[str, Any]) -> list[str]:
    """The reward breakdown: each term as weight × value = reward, then the episode counters."""
    terms = breakdown.get("terms")
    if isinstance(terms, dict):
        parts = []
        for name, t in terms.items():
            if isinstance(t, dict):
                parts.append(f"{name} {t.get('weight', 0):g}×{t.get('value', 0):.2f}={t.get('reward', 0):+.2f}")
        lines = [f"  {breakdown.get('scheme', 'reward')} reward:"] + [f"    {p}" for p in parts]
        if isinstance(breakdown.get("uncapped"), (int, float)) and breakdown.get("uncapped") != breakdown.get("total"):
            lines.append(f"  uncapped {breakdown['uncapped']:.3f} → capped {breakdown.get('total', 0):.3f}")
        state = breakdown.get("state") or {}
        counters = [f"{k.replace('_', ' ')} {state[k]}" for k in ("steps", "python_calls", "score_calls",
                                                                    "timed_out_steps") if k in state]
        if isinstance(state.get("elapsed_s"), (int, float)):
            counters.append(f"{state['elapsed_s']:.1f}s")
        if counters:
            lines.append("  " + " · ".join(counters))
        return lines
    return ["  " + "  ".join(f"{k} {v:+.2f}" if isinstance(v, (int, float)) else f"{k} {v}"
                             for k, v in breakdown.items() if not isinstance(v, (dict, list)))]


def header_text(traj: dict[str, Any]) -> str:
    grade = traj.get("grade") or {}
    flags = [f for f in ("terminated", "truncated", "timed_out") if traj.get(f)]
    reward = traj.get("reward")
    lines = [
        f"[b]{escape(traj['id'])}[/b] · {escape(str(traj.get('env_id')))} · group {escape(str(traj.get('group_id')))}",
        f"{escape(traj['policy'])} · {escape(traj['scaffold'])} · {traj.get('n_turns', 0)} turns · "
        f"{traj['status']}{' (' + ', '.join(flags) + ')' if flags else ''}",
        (f"[b]reward {reward:.3f}[/b]" if isinstance(reward, (int, float)) else "reward —") + f" · {medal_of(grade)}",
    ]
    breakdown = traj.get("reward_breakdown") or {}
    if breakdown:
        lines += [escape(line) for line in breakdown_lines(breakdown)]
    if grade:
        score = grade.get("score")
        lines.append(f"score {score if score is None else round(score, 4)} · "
                     f"{'valid' if grade.get('valid_submission') else 'invalid'}"
                     + (f" · {escape(str(grade['error']))}" if grade.get("error") else ""))
    return "\n".join(lines)


def turn_renderable(turn: dict[str, Any], width_hint: int = 60):
    wf = turn.get("well_formed")
    mark = "" if wf is None else (" ✓" if wf else " ✗ malformed")
    wall = f" · {turn['wall_s']:.2f}s" if turn.get("wall_s") is not None else ""
    parts: list[Any] = [Text.from_markup(f"[b]#{turn['idx']} {escape(turn['role'])}[/b]{mark}{wall}"
                                         + (f" · tool {escape(turn['tool'])}" if turn.get("tool") else ""))]
    if turn.get("text"):
        parts.append(Text(turn["text"]))
    if turn.get("code"):
        parts.append(Syntax(turn["code"], "python", word_wrap=True, theme="ansi_dark", background_color="default"))
    if turn.get("observation"):
        parts.append(Text("→ " + turn["observation"], style="dim"))
    return Group(*parts)


class TrajectoryView(VerticalScroll, can_focus=True):
    """``show(trajectory)`` with the dict from ``store.trajectories.get(id)`` (turns included)."""

    DEFAULT_CSS = """
    TrajectoryView { height: 1fr; border: round $panel; padding: 0 1; }
    TrajectoryView:focus { border: round $primary; }
    TrajectoryView .traj-header { background: $panel; padding: 0 1; margin-bottom: 1; }
    TrajectoryView .traj-turn { margin-bottom: 1; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.trajectory: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Static("no trajectory", classes="traj-header")

    def show(self, trajectory: dict[str, Any] | None) -> None:
        self.trajectory = trajectory
        self.remove_children()
        if trajectory is None:
            self.mount(Static("no trajectory", classes="traj-header"))
            return
        widgets = [Static(header_text(trajectory), classes="traj-header")]
        widgets += [Static(turn_renderable(t), classes="traj-turn") for t in trajectory.get("turns", [])]
        grade = trajectory.get("grade")
        if grade:
            widgets.append(Static(Text("grade report " + json.dumps(grade, sort_keys=True), style="dim")))
        self.mount_all(widgets)
        self.scroll_home(animate=False)
