"""One environment in depth: description, dataset preview of train/test, the board (the population of reference
solutions by family, or a real leaderboard) and medal thresholds, the
verification log (checks and synthesis attempts), and the generator program. Export writes an MLE-bench-style
competition folder (asking for a folder when the default one is taken); ``e`` on the Generator tab edits the program
in $EDITOR and re-verifies it as a new environment (``sandmle envs add``)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

from rich.syntax import Syntax
from textual import work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane

from engine.envs.layout import board_of
from engine.envs.provenance import origin
from engine.grading.thresholds import BOARDS, rank_name

from ..fmt import fmt_duration
from ..widgets.dataset_preview import DatasetPreview
from ..widgets.markdown_pane import MarkdownPane
from .base import BaseScreen, run_cli_quick
from .prompt import PromptScreen


def export_env(screen, env_id: str) -> None:
    """``sandmle envs export ID FOLDER`` (an MLE-bench-style competition folder) in a thread. The folder is
    ``<data dir>/exports/<env id>``; when that one is taken, a prompt asks for another (a free one suggested)."""
    default = screen.store.data_dir / "exports" / env_id

    def export(folder: str | None) -> None:
        if folder:
            run_cli_quick(screen, ["envs", "export", env_id, str(Path(folder).expanduser())])

    if not taken(default):
        export(str(default))
        return
    free = next(default.with_name(f"{env_id}-{n}") for n in range(2, 10_000)
                if not taken(default.with_name(f"{env_id}-{n}")))
    screen.app.push_screen(PromptScreen(f"Export {env_id}", "folder", value=str(free),
                                        help_text=f"{default} already holds an export; export into:"), export)


def taken(folder: Path) -> bool:
    return folder.exists() and any(folder.iterdir())


def short(value, width: int = 160) -> str:
    """A compact one-line rendering of a verification value (floats to 4 digits, ladders as name score)."""
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, list) and value and all(isinstance(v, dict) and "name" in v for v in value):
        text = ", ".join(f"{v['name']} {short(v.get('score'))}" + (f" ({v['status']})" if v.get("status") not in
                                                                      (None, "ok") else "") for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={short(v, 40)}" for k, v in value.items())
    elif isinstance(value, list):
        text = ", ".join(short(v, 40) for v in value) or "—"
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def verification_text(env: dict, attempts: list[dict]) -> str:
    lines = [f"status: {env['status']}" + (f" — {env['reason']}" if env.get("reason") else "")]
    for name, check in (env.get("verification") or {}).items():
        if isinstance(check, dict):
            ok = check.get("ok", check.get("passed"))
            mark = "✓" if ok else ("✗" if ok is False else "·")
            lines.append(f"{mark} {name}")
            lines += [f"    {k}: {short(v)}" for k, v in check.items() if k not in ("ok", "passed")]
        else:
            lines.append(f"· {name}: {short(check)}")
    if attempts:
        lines += ["", "synthesis attempts:"]
        for a in attempts:
            lines.append(f"  {a['role']:<9} #{a['attempt']} {a['verdict']:<6} {fmt_duration(a.get('wall_s')):>7} "
                         f"{(a.get('feedback') or '')[:120]}")
    return "\n".join(lines)


class EnvDetailScreen(BaseScreen):
    LABEL = "Environment"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="env.back"),
        Binding("x", "export", "Export", id="env.export"),
        Binding("right_square_bracket", "tab(1)", "Next tab", id="env.next_tab",
                tooltip="Overview, Data, Board, Verify, Generator"),
        Binding("left_square_bracket", "tab(-1)", "Prev tab", show=False, id="env.prev_tab"),
        Binding("g", "edit_generator", "Edit generator", id="env.edit_generator"),
    ]

    def __init__(self, env_id: str, **kwargs):
        super().__init__(**kwargs)
        self.env_id = env_id

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(id="env-tabs"):
            with TabPane("Overview", id="tab-overview"):
                yield MarkdownPane(id="env-description")
            with TabPane("Data", id="tab-data"):
                with VerticalScroll():
                    yield DatasetPreview("train", id="preview-train")
                    yield DatasetPreview("test", id="preview-test")
            with TabPane("Board", id="tab-board"):
                yield Static("", id="env-thresholds")
                yield DataTable(id="env-board", cursor_type="row", zebra_stripes=True)
            with TabPane("Verify", id="tab-verify"):
                with VerticalScroll():
                    yield Static("", id="env-verification")
            with TabPane("Generator", id="tab-generator"):
                with VerticalScroll():
                    yield Static("", id="env-generator")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#env-board", DataTable).add_columns("#", "entry", "features", "score", "medal", "seed",
                                                            "wall")
        self.refresh_data()
        root = Path(self.env["dir"]) if self.env.get("dir") else None
        generator = root / "generator.py" if root else None
        self.query_one("#env-generator", Static).update(
            Syntax(generator.read_text(encoding="utf-8"), "python", line_numbers=True, theme="ansi_dark",
                   background_color="default")
            if generator and generator.is_file() else "no generator.py on disk")
        self.load_previews(root, self.env.get("target_columns") or [])
        self.ready = True

    def reload(self) -> None:
        """The row's parts (status, split, board, verification); the files on disk do not change."""
        env = self.store.envs.get(self.env_id)
        self.env = env
        self.sub_title = f"{env['id']} · {env['status']}"
        root = Path(env["dir"]) if env.get("dir") else None
        description = ""
        if root and (root / "public" / "description.md").is_file():
            description = (root / "public" / "description.md").read_text(encoding="utf-8")
        head = (f"# {env['title']}\n\n`{env['id']}` · seed `{env['seed_id']}` · {env['modality']} · "
                f"{env['task_type']} · **{env['metric']}** ({'lower' if env['lower_is_better'] else 'higher'} "
                f"is better) · status **{env['status']}**"
                + (f" — {env['reason']}" if env.get("reason") else "")
                + f"\n\norigin **{origin(env)}** · backend {env.get('backend') or '?'} · rng seed {env.get('rng_seed')} · "
                f"split {env['split']}"
                f" · {env['n_train'] or '?'} train / {env['n_test'] or '?'} test rows\n\n")
        self.query_one("#env-description", MarkdownPane).update(head + (description or "*no description.md on disk*"))
        self.fill_board(env)
        self.query_one("#env-verification", Static).update(
            verification_text(env, self.store.envs.attempts(env_id=self.env_id)))

    def fill_board(self, env: dict) -> None:
        entries = self.store.envs.leaderboard(self.env_id)
        self.query_one("#env-thresholds", Static).update(board_header(env, entries))
        board = self.query_one("#env-board", DataTable)
        board.clear()
        for row in board_rows(entries, env.get("thresholds") or {}, bool(env["lower_is_better"])):
            board.add_row(*row)

    @work(exclusive=True, group="env-previews")
    async def load_previews(self, root: Path | None, targets: list[str]) -> None:
        public = root / "public" if root else None
        self.query_one("#preview-train", DatasetPreview).show(public / "train.csv" if public else None, targets)
        self.query_one("#preview-test", DatasetPreview).show(public / "test.csv" if public else None, [])

    def action_tab(self, delta: int) -> None:
        """The next (or previous) tab; the number keys stay the screens' keys, as everywhere."""
        tabs = self.query_one("#env-tabs", TabbedContent)
        ids = [pane.id for pane in tabs.query(TabPane)]
        tabs.active = ids[(ids.index(tabs.active) + delta) % len(ids)]

    def action_export(self) -> None:
        export_env(self, self.env_id)

    def action_edit_generator(self) -> None:
        """Edit a copy of generator.py in $EDITOR; when it changed, verify it as a new environment of the same seed
        (a ``sandmle envs add`` job)."""
        if self.query_one("#env-tabs", TabbedContent).active != "tab-generator":
            self.notify("open the Generator tab (] moves between tabs) to edit the program", timeout=4)
            return
        source = Path(self.env["dir"] or "") / "generator.py"
        if not source.is_file():
            self.notify("this environment has no generator.py on disk", severity="error")
            return
        copy = self.store.data_dir / "edits" / f"{self.env_id}-{time.strftime('%Y%m%d-%H%M%S')}.py"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(source.read_bytes())
        if not self.run_editor(copy):
            return
        if copy.read_bytes() == source.read_bytes():
            copy.unlink()
            self.notify("generator.py unchanged: nothing to verify", timeout=4)
            return
        self.app.launch_job("synthesis", ["envs", "add", "--seed", self.env["seed_id"], "--program", str(copy)],
                            f"re-verify {self.env_id} (edited)")

    def run_editor(self, path: Path) -> bool:
        """$VISUAL / $EDITOR (else vi) on ``path``, with the terminal handed over; False when it could not run."""
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        try:
            try:
                with self.app.suspend():
                    code = subprocess.call([*editor, str(path)])
            except SuspendNotSupported:  # headless (tests): the editor runs without the terminal
                code = subprocess.call([*editor, str(path)], stdin=subprocess.DEVNULL)
        except OSError as exc:
            self.notify(f"cannot run the editor {editor[0]!r}: {exc.strerror} (set $EDITOR)", severity="error")
            return False
        if code != 0:
            self.notify(f"the editor exited with {code}: nothing verified", severity="warning")
        return code == 0


def board_header(env: dict, entries: list) -> str:
    """What the board is (its kind, size, families), the medal thresholds, and where the strong reference would
    rank on it; for a 9-entry board of before, how to rebuild it."""
    t = env.get("thresholds") or {}
    kind = board_of(t, entries)
    shown = " · ".join(f"{k} {t[k]:.4g}" for k in ("gold", "silver", "bronze", "median")
                       if isinstance(t.get(k), (int, float)))
    families = {e.get("family") for e in entries if e.get("family")}
    what = {"population": f"population board: {len(entries)} independent reference solutions "
                          f"({len({e['name'] for e in entries})} solutions, {len(families)} families)",
            "paper": f"the paper's thresholds; rank among {len(entries)} reference solutions",
            "human": f"real leaderboard: {len(entries)} entries (the rank is HumanRank)",
            "ladder": f"[yellow]old {len(entries)}-entry board of the verifier's own scripts[/]: "
                      f"`sandmle envs reboard {env['id']}`"}.get(kind or "", BOARDS.get(kind or "", "no board"))
    report = (env.get("verification") or {}).get("report") or {}
    strong = report.get("strong_rank")
    lines = [what, f"medals ({'lower' if env['lower_is_better'] else 'higher'} is better): {shown or '—'}"
             + (f" · strong reference: {rank_name(kind, len(entries))} {strong:.2f}"
                if isinstance(strong, (int, float)) else "")]
    paper = ((env.get("verification") or {}).get("paper") or {}).get("thresholds") or {}
    theirs = " · ".join(f"{k} {paper[k]:.4g}" for k in ("gold", "silver", "bronze", "median")
                        if isinstance(paper.get(k), (int, float)))
    if theirs and kind != "paper":
        lines.append(f"paper's thresholds: {theirs}")
    return "\n".join(lines)


def board_rows(entries: list, t: dict, lower: bool) -> list[tuple[str, ...]]:
    """The board by family: a line per family (best first: its entries, best score, medals), then its entries
    with their overall place, parameters, feature set, score, medal, seed and seconds."""
    place = {id(e): i for i, e in enumerate(entries, 1)}  # the store lists them best first
    groups: dict[str, list] = {}
    for e in entries:
        groups.setdefault(e.get("family") or e.get("source") or "entries", []).append(e)
    rows: list[tuple[str, ...]] = []
    for family, members in groups.items():  # in the order of each family's best entry
        medals = [medal_of(e["score"], t, lower) for e in members]
        count = " ".join(f"{medals.count(m)} {m}" for m in ("gold", "silver", "bronze") if medals.count(m))
        rows.append(("", f"[b]{family}[/b] · {len(members)}", "", f"{members[0]['score']:.4g}", count, "", ""))
        for e in members:
            params = json.loads(e["params"]) if e.get("params") else {}
            feats = params.pop("features", "")
            detail = " ".join(f"{k}={v}" for k, v in params.items() if k != "members")
            if "members" in params:
                detail = "+".join(m[0] for m in params["members"]) + (f" {detail}" if detail else "")
            rows.append((str(place[id(e)]), f"  {e['name']} {detail}".rstrip(), feats, f"{e['score']:.4g}",
                         medal_of(e["score"], t, lower), str(e.get("rng_seed") if e.get("rng_seed") is not None
                                                            else ""), fmt_duration(e.get("wall_s"))))
    return rows


def medal_of(score: float, t: dict, lower: bool) -> str:
    for name in ("gold", "silver", "bronze", "median"):
        bar = t.get(name)
        if isinstance(bar, (int, float)) and (score <= bar if lower else score >= bar):
            return "above median" if name == "median" else name
    return ""
