"""A rollout turn by turn. A short header (reward, medal, breakdown), the system prompt and task folded into one
line, then one block per assistant turn: its tool, time and tokens, the thought, the code it ran and the
observation that came back (head and tail). Focusable and scrollable; two side by side compare rollouts of a group."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from rich.markup import escape
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from store.common import JSON
from store.trajectories import Trajectory, Turn

from ..fmt import fmt_duration, short_id

MEDALS = (("gold", "gold_medal"), ("silver", "silver_medal"), ("bronze", "bronze_medal"),
          ("above median", "above_median"))
OBS_HEAD, OBS_TAIL = 8, 3  # observation lines shown before and after the cut
FIRST_TURNS = 3  # turns laid out before the first paint (more than a screenful); the rest follow at once
_CALL = re.compile(r"<tool_call>.*?(</tool_call>|$)|<answer>.*?(</answer>|$)", re.S)
_THINK_TAGS = re.compile(r"</?think>")


@cache
def code_highlighter() -> Syntax:
    """One Python highlighter (building a pygments lexer compiles its regexes: ~0.1 s; the app does it early, in
    a thread)."""
    from pygments.lexers.python import PythonLexer  # slow to import: the app loads it early, in a thread

    return Syntax("", PythonLexer(), theme="ansi_dark", background_color="default")


def medal_of(grade: dict[str, JSON]) -> str:
    """The best medal of a grade report (MLE-bench's field names, or the short ones)."""
    for name, field in MEDALS:
        if grade.get(field) or grade.get(name.replace(" ", "_")):
            return name
    return "no medal"


@dataclass
class Step:
    """One assistant turn and the tool turn that answered it (None after the final answer)."""

    n: int
    assistant: Turn
    tool: Turn | None


def split_turns(turns: list[Turn]) -> tuple[list[Turn], list[Step]]:
    """(the turns before the first assistant turn — system prompt and task —, the assistant steps)."""
    first = next((i for i, t in enumerate(turns) if t.role == "assistant"), len(turns))
    steps: list[Step] = []
    for t in turns[first:]:
        if t.role == "assistant":
            steps.append(Step(len(steps) + 1, t, None))
        elif steps and steps[-1].tool is None:
            steps[-1].tool = t
    return turns[:first], steps


def head_tail_lines(text: str, head: int = OBS_HEAD, tail: int = OBS_TAIL) -> str:
    """The first ``head`` and last ``tail`` lines of ``text``, with how many were left out between them."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= head + tail + 1:
        return "\n".join(lines)
    return "\n".join(lines[:head] + [f"… {len(lines) - head - tail} lines …"] + lines[-tail:])


def thought(turn: Turn) -> str:
    """What the model said besides its call: the think block's text (the whole reply when it was malformed)."""
    text = turn.text
    if turn.well_formed is False or not (turn.code or turn.tool):
        return text.strip()
    return _THINK_TAGS.sub("", _CALL.sub("", text)).strip()


def reward_terms(traj: Trajectory) -> str:
    """'valid 0.20 + medal 0.60 + format 0.10': the breakdown's terms that paid."""
    terms = traj.reward_breakdown.get("terms")
    if not isinstance(terms, dict):
        return ""
    return " + ".join(f"{name} {t['reward']:.2f}" for name, t in terms.items()
                      if isinstance(t, dict) and isinstance(t.get("reward"), (int, float)) and t["reward"])


def header_text(traj: Trajectory) -> str:
    grade = traj.grade or {}
    score = grade.get("score")
    flags = [f for f, on in (("truncated", traj.truncated), ("timed_out", traj.timed_out)) if on]
    terms = reward_terms(traj)
    lines = [
        f"[b]reward {traj.reward:.3f}[/b] · {medal_of(grade)} · " + ("valid" if grade.get("valid_submission") else "[red]invalid[/]")
        + (f" · score {score:.4g}" if isinstance(score, (int, float)) else ""),
        *([f"= {escape(terms)}"] if terms else []),
        f"{escape(short_id(traj.id, 17))} · {escape(str(traj.env_id))} · "
        f"{fmt_duration(traj.wall_s)} · {traj.status}" + (f" ({', '.join(flags)})" if flags else ""),
    ]
    if grade.get("error"):
        lines.append(f"[red]{escape(str(grade['error']))}[/]")
    return "\n".join(lines)


def prelude_text(prelude: list[Turn], folded: bool) -> Text:
    roles = " + ".join("task" if t.role == "user" else t.role for t in prelude) or "no prompt"
    lines = sum(len(t.text.splitlines()) for t in prelude)
    if folded:
        return Text(f"▸ {roles} · {lines} lines · enter", style="dim")
    body = "\n\n".join(f"[{'task' if t.role == 'user' else t.role}]\n{t.text}" for t in prelude)
    return Text(f"▾ {roles} · enter: fold\n{body}", style="dim")


def step_title(step: Step) -> Text:
    a, tool = step.assistant, step.tool
    name = a.tool or (tool.tool if tool is not None else None) or "no call"
    mark = {True: " ✓", False: " ✗ malformed", None: ""}[a.well_formed]
    made = (f"{len(a.token_ids)} tok " if a.token_ids else "") + f"{a.wall_s:.1f}s"
    parts = [made] + ([f"ran {tool.wall_s:.1f}s"] if tool is not None else [])
    title = Text.assemble((f"#{step.n} ", "bold"), (name, "bold cyan"), (mark, "green" if "✓" in mark else "red"))
    title.append(" · " + " · ".join(parts), style="dim")
    return title


def step_renderable(step: Step) -> Text:
    """One Text per turn (code highlighted once, up front): a rollout of many turns lays out quickly."""
    parts: list[Text] = [step_title(step)]
    said = thought(step.assistant)
    if said:
        parts.append(Text(said, style="italic"))
    code = step.assistant.code or (step.tool.code if step.tool is not None else None)
    if code:
        highlighted = code_highlighter().highlight(code)
        highlighted.rstrip()
        parts.append(highlighted)
    if step.tool is not None:
        obs = step.tool.observation or step.tool.text
        parts.append(Text("→ " + (head_tail_lines(obs) or "(no output)"), style="dim"))
    return Text("\n").join(parts)


class TrajectoryView(VerticalScroll, can_focus=True):
    """``show(trajectory)`` with a trajectory from ``store.trajectories.get(id)`` (turns included)."""

    DEFAULT_CSS = """
    TrajectoryView { height: 1fr; border: round $panel; padding: 0 1; scrollbar-size-vertical: 1; }
    TrajectoryView:focus { border: round $primary; }
    TrajectoryView .traj-header { background: $panel; }
    TrajectoryView .traj-prelude { margin-bottom: 1; }
    TrajectoryView .traj-turn { margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("enter,space", "toggle_prelude", "Prompt", id="traj.prelude",
                tooltip="Unfold or fold the system prompt and the task"),
        Binding("right_square_bracket", "turn(1)", "Next turn", id="traj.next_turn"),
        Binding("left_square_bracket", "turn(-1)", "Prev turn", show=False, id="traj.prev_turn"),
    ]

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.trajectory: Trajectory | None = None
        self.prelude: list[Turn] = []
        self.steps: list[Step] = []
        self.folded = True
        self.shown = 0  #: counts show() calls: a late mount of an older rollout's turns is dropped

    def compose(self) -> ComposeResult:
        yield Static("no rollout", classes="traj-header")

    def show(self, trajectory: Trajectory | None) -> None:
        """Show a rollout: the turns that fill the view at once, the rest right after the first paint (a long
        rollout's code and observations take a while to lay out)."""
        self.trajectory = trajectory
        self.shown += 1
        self.remove_children()
        if trajectory is None:
            self.mount(Static("no rollout", classes="traj-header"))
            return
        self.prelude, self.steps = split_turns(trajectory.turns)
        self.folded = True
        self.mount_all([Static(header_text(trajectory), classes="traj-header"),
                        Static(prelude_text(self.prelude, True), classes="traj-prelude"),
                        *self.turn_widgets(self.steps[:FIRST_TURNS])])
        if not self.steps:
            self.mount(Static(Text("no assistant turn", style="dim")))
        elif len(self.steps) > FIRST_TURNS:
            self.call_after_refresh(self.mount_rest, self.shown)
        self.scroll_home(animate=False)

    @staticmethod
    def turn_widgets(steps: list[Step]) -> list[Static]:
        return [Static(step_renderable(s), classes="traj-turn") for s in steps]

    def mount_rest(self, shown: int) -> None:
        if shown == self.shown:  # still the same rollout
            self.mount_all(self.turn_widgets(self.steps[FIRST_TURNS:]))

    def action_toggle_prelude(self) -> None:
        if self.trajectory is None:
            return
        self.folded = not self.folded
        self.query_one(".traj-prelude", Static).update(prelude_text(self.prelude, self.folded))

    def action_turn(self, delta: int) -> None:
        """Scroll the next (or previous) assistant turn to the top."""
        turns = list(self.query(".traj-turn"))
        if not turns:
            return
        tops = [w.virtual_region.y for w in turns]
        if delta > 0:
            target = next((w for w, y in zip(turns, tops) if y > self.scroll_y), turns[-1])
        else:
            target = next((w for w, y in zip(reversed(turns), reversed(tops)) if y < self.scroll_y), turns[0])
        self.scroll_to(y=target.virtual_region.y, animate=False)
