"""Seeds: the real tasks synthesis imitates. Filter as you type, read the description, schema and the seed's
synthesis runs (wall time, API cost), enable or disable, tag, import a folder, and synthesize N environments from a
seed."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Input

from engine.errors import SandmleError
from engine.seeds.load import import_seeds
from engine.synthesis.usage import usage_summary
from store import Store

from ..fmt import clip, fmt_cost, fmt_duration, wall_seconds
from ..jobs import build_argv, resolve_command
from ..runinfo import run_cost
from ..widgets.markdown_pane import MarkdownPane
from ..widgets.nav_bar import NavBar
from .base import BaseScreen, fill_table, selected_key
from .prompt import PromptScreen
from .synth_form import SynthFormScreen


#: how many of a seed's synthesis runs its detail lists (newest first)
SHOWN_RUNS = 5


def usage_markdown(usage: dict) -> str:
    """The LLM spend on a seed's synthesis: calls, tokens, cost, cost per verified environment, by role."""
    if not usage["calls"]:
        return "No LLM calls yet (offline synthesis, grounded or procedural, costs nothing)."
    per = usage["cost_per_verified_usd"]
    lines = [f"{usage['calls']} LLM calls · {usage['tokens']:,} tokens · **${usage['cost_usd']:.4f}**"
             + (f" · ${per:.4f} and {usage['tokens_per_verified']:,} tokens per verified environment"
                if per is not None else " · no verified environment yet"), "",
             "| role | calls | tokens in | tokens out | cached | USD |", "|---|---|---|---|---|---|"]
    lines += [f"| {role} | {u['calls']} | {u['input_tokens']:,} | {u['output_tokens']:,} | {u['cache_read_tokens']:,} "
              f"| {u['cost_usd']:.4f} |" for role, u in usage["by_role"].items()]
    return "\n".join(lines)


def seed_markdown(seed: dict, runs: list[str], usage: dict | None = None) -> str:
    """The seed's description, schema and tags; ``runs``: one line per synthesis run of it (``synthesis_lines``);
    ``usage``: what its synthesis cost in LLM calls (``usage_summary``)."""
    direction = "lower is better" if seed["lower_is_better"] else "higher is better"
    lines = [f"## {seed['title']}", "",
             f"`{seed['id']}` · {seed['modality']} · {seed['task_type']} · **{seed['metric']}** ({direction})", "",
             f"id column `{seed['id_column']}` · targets {', '.join(f'`{t}`' for t in seed['target_columns'])} · "
             f"original size {seed['train_size']:,} train / {seed['test_size']:,} test"
             + (f" · origin `{seed['origin']}`" if seed.get("origin") else ""), "",
             f"tags: {', '.join(seed['tags']) or '—'} · {'enabled' if seed['enabled'] else '**disabled**'}", "",
             *(["### Synthesis runs", "", *runs, ""] if runs else []),
             "### Schema", "", "| column | dtype | role | description |", "|---|---|---|---|"]
    for c in seed["columns"]:
        lines.append(f"| {c['name']} | {c.get('dtype', '')} | {c.get('role', '')} | {c.get('description', '')} |")
    if usage is not None:
        lines += ["", "### Synthesis cost", "", usage_markdown(usage)]
    lines += ["", "### Description", "", seed["description"].strip()]
    return "\n".join(lines)


def synthesis_lines(store: Store, seed_id: str) -> list[str]:
    """The seed's latest synthesis runs, one Markdown list item each: status, environments verified of those asked
    for, wall time and what an API cost (CLI runs too, not only the jobs started here)."""
    runs = [r for r in store.runs.list(kind="synthesis", limit=500) if (r.get("config") or {}).get("seed_id") == seed_id]
    lines = []
    for r in runs[:SHOWN_RUNS]:
        cfg, summary = r.get("config") or {}, r.get("summary") or {}
        verified = summary.get("verified", store.envs.count(seed_id=seed_id, status="verified", since=r["created_at"]))
        cost = fmt_cost(run_cost(store, r))
        lines.append(f"- `{r['id']}` · {r['status']} · {verified}/{cfg.get('count', '?')} verified · "
                     f"{cfg.get('backend', '?')} · wall {fmt_duration(wall_seconds(r))}"
                     + (f" · {cost}" if cost else "") + rejected_note(summary))
    if len(runs) > SHOWN_RUNS:
        lines.append(f"- … {len(runs) - SHOWN_RUNS} older (`sandmle runs list --kind synthesis`)")
    return lines


def rejected_note(summary: dict) -> str:
    """`` · N rejected (M raised): <first reason>`` for a run summary with rejected attempts, else ""."""
    rejected, failed = summary.get("rejected") or 0, summary.get("failed") or 0
    if not rejected:
        return ""
    reasons = summary.get("reasons") or []
    return (f" · {rejected} rejected" + (f" ({failed} raised)" if failed else "")
            + (f": {clip(str(reasons[0]), 90)}" if reasons else ""))


class SeedsScreen(BaseScreen):
    LABEL = "Seeds"
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="seeds.filter"),
        Binding("escape", "focus_table", "Table", show=False, id="seeds.table"),
        Binding("e", "toggle_enabled", "On/off", id="seeds.toggle"),
        Binding("t", "tag", "Tag", id="seeds.tag"),
        Binding("i", "import_folder", "Import", id="seeds.import"),
        Binding("l", "synthesize", "Launch synth", id="seeds.synth",
                tooltip="Synthesize N environments from the selected seed (a job)"),
        Binding("d", "focus_detail", "Detail", show=False, id="seeds.detail"),
    ]

    def compose(self) -> ComposeResult:
        yield NavBar("seeds")
        yield Input(placeholder="filter seeds: id, title, tag, metric (/)", id="seed-filter", classes="filter", compact=True)
        yield DataTable(id="seeds-table", cursor_type="row", zebra_stripes=True, classes="main-table")
        yield MarkdownPane(id="seed-detail", classes="detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#seeds-table", DataTable)
        table.add_columns("id", "modality", "metric", "on", "tags", "envs")
        self.show_first(table)

    @property
    def table(self) -> DataTable:
        return self.query_one("#seeds-table", DataTable)

    def reload(self) -> None:
        text = self.query_one("#seed-filter", Input).value.strip()
        keep = selected_key(self.table)
        rows = [(s["id"], (clip(s["id"], 28), clip(s["modality"], 10), clip(s["metric"], 12),
                           "✓" if s["enabled"] else "·", clip(",".join(s["tags"]), 8),
                           f"{s['n_verified']}/{s['n_envs']}"))
                for s in self.store.seeds.list(text=text or None)]
        fill_table(self.table, rows, keep)
        self.show_detail()

    def show_detail(self) -> None:
        key = selected_key(self.table)
        detail = self.query_one("#seed-detail", MarkdownPane)
        if key is None:
            detail.update("*No seeds match.* Import a folder with `i`.")
            return
        verified = self.store.envs.count(seed_id=key, status="verified")
        usage = usage_summary(self.store.envs.attempt_usage(seed_id=key), verified)
        detail.update(seed_markdown(self.store.seeds.get(key), synthesis_lines(self.store, key), usage))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail()

    def action_focus_filter(self) -> None:
        self.query_one("#seed-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.table.focus()

    def action_focus_detail(self) -> None:
        self.query_one("#seed-detail", MarkdownPane).focus()

    def action_toggle_enabled(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        seed = self.store.seeds.get(key)
        self.store.seeds.set_enabled(key, not seed["enabled"])
        self.reload()

    def action_tag(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return

        def done(value: str | None) -> None:
            if not value:
                return
            remove = value.startswith("-")
            tag = value.lstrip("+-").strip()
            if tag:
                self.store.seeds.tag(key, tag, remove=remove)
                self.reload()

        self.app.push_screen(PromptScreen(f"Tag {key}", "tag (prefix - to remove)",
                                          help_text="e.g. 'hard' adds a tag, '-hard' removes it"), done)

    def action_import_folder(self) -> None:
        def done(path: str | None) -> None:
            if path:
                self.import_folder(path)

        self.app.push_screen(PromptScreen("Import seeds", "path to a seed folder, an MLE-bench competition, or a "
                                          "folder of them"), done)

    @work(thread=True, exclusive=True, group="seed-import")
    def import_folder(self, path: str) -> None:
        try:
            seeds = import_seeds(self.store, path)
        except SandmleError as exc:
            self.app.call_from_thread(self.notify, str(exc), title="import failed", severity="error", timeout=8)
            return
        self.app.call_from_thread(self.notify, f"imported {len(seeds)} seed(s): "
                                  + ", ".join(s.id for s in seeds[:6]))
        self.app.call_from_thread(self.reload)

    def action_synthesize(self) -> None:
        key = selected_key(self.table)
        if key is None:
            return
        available = resolve_command(["synth"]) is not None

        def done(options: dict | None) -> None:
            if not options:
                return
            argv, ignored = build_argv(["synth"], {**options, "json": True})
            self.app.launch_job("synthesis", argv, f"synth {options['count']} × {key} ({options['backend']})",
                                seed_id=key, count=options["count"])
            if ignored:
                self.notify(f"`sandmle synth` does not accept: {', '.join(ignored)}", severity="warning")

        self.app.push_screen(SynthFormScreen(key, available, self.app.settings.synthesis.backend), done)
