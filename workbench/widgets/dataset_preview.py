"""Dataset preview: the first rows of a CSV in a DataTable, and per column its dtype, missing %, distinct values,
a summary, and a small histogram (numeric) or label distribution (categorical)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

BLOCKS = " ▁▂▃▄▅▆▇█"
MAX_ROWS = 20_000  # micro datasets are 50–200 rows; guard against a big file


def sparkbars(counts: list[int]) -> str:
    """A one-line histogram: one block character per bin, height relative to the fullest bin."""
    top = max(counts) if counts else 0
    if top == 0:
        return ""
    return "".join(BLOCKS[0 if c == 0 else max(1, round(c / top * (len(BLOCKS) - 1)))] for c in counts)


def column_stats(path: Path, targets: list[str] | None = None, bins: int = 10) -> tuple[list[dict[str, Any]], int]:
    """Per-column figures of a CSV: (rows of stats, number of data rows)."""
    import pandas as pd  # ~0.7 s to import: on the first preview (the app imports it early, in a thread)

    frame = pd.read_csv(path, nrows=MAX_ROWS)
    targets = targets or []
    out = []
    for name in frame.columns:
        col = frame[name]
        missing = float(col.isna().mean() * 100) if len(col) else 0.0
        entry: dict[str, Any] = {"column": name, "dtype": str(col.dtype), "missing": missing,
                                 "distinct": int(col.nunique(dropna=True)), "target": name in targets}
        values = col.dropna()
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col) and len(values):
            counts, _ = np.histogram(values.astype(float), bins=min(bins, max(1, entry["distinct"])))
            entry["summary"] = f"{values.mean():.3g} ± {values.std(ddof=0):.2g} [{values.min():.3g}, {values.max():.3g}]"
            entry["shape"] = sparkbars([int(c) for c in counts])
        else:
            top = values.astype(str).value_counts().head(4)
            share = [f"{k[:12]} {v / max(1, len(values)):.0%}" for k, v in top.items()]
            entry["summary"] = ", ".join(share)
            entry["shape"] = sparkbars([int(v) for v in values.astype(str).value_counts().head(bins)])
        out.append(entry)
    return out, len(frame)


def label_distribution(path: Path, column: str, width: int = 24) -> list[tuple[str, int, str]]:
    """(label, count, bar) for each value of a target column (binned when it is numeric with many values)."""
    import pandas as pd  # ~0.7 s to import: on the first preview (the app imports it early, in a thread)

    frame = pd.read_csv(path, usecols=[column], nrows=MAX_ROWS)
    col = frame[column].dropna()
    if pd.api.types.is_numeric_dtype(col) and col.nunique() > 12:
        col = pd.cut(col, bins=8).astype(str)
    counts = col.astype(str).value_counts().head(12)
    top = int(counts.max()) if len(counts) else 1
    return [(str(k), int(v), "█" * max(1, round(v / top * width))) for k, v in counts.items()]


class DatasetPreview(Vertical):
    """``show(path, targets)`` fills the preview; a missing file says so."""

    DEFAULT_CSS = """
    DatasetPreview { height: auto; }
    DatasetPreview .preview-title { text-style: bold; color: $accent; height: 1; }
    DatasetPreview DataTable { height: auto; max-height: 14; }
    DatasetPreview #preview-labels { height: auto; padding: 0 1; }
    """

    def __init__(self, title: str = "", **kwargs):
        super().__init__(**kwargs)
        self.heading = title
        self.stats: list[dict[str, Any]] = []
        self.n_rows = 0

    def compose(self) -> ComposeResult:
        yield Static(self.heading, classes="preview-title", id="preview-title")
        yield DataTable(id="preview-stats", cursor_type="row", zebra_stripes=True)
        yield Static("", id="preview-labels")
        yield DataTable(id="preview-rows", zebra_stripes=True)

    def show(self, path: Path | None, targets: list[str] | None = None, rows: int = 30) -> None:
        import pandas as pd  # ~0.7 s to import: on the first preview (the app imports it early, in a thread)

        stats_table = self.query_one("#preview-stats", DataTable)
        rows_table = self.query_one("#preview-rows", DataTable)
        labels = self.query_one("#preview-labels", Static)
        title = self.query_one("#preview-title", Static)
        stats_table.clear(columns=True)
        rows_table.clear(columns=True)
        if path is None or not Path(path).is_file():
            title.update(f"{self.heading}: file not found ({path})")
            labels.update("")
            self.stats, self.n_rows = [], 0
            return
        self.stats, self.n_rows = column_stats(Path(path), targets)
        title.update(f"{self.heading} — {self.n_rows} rows × {len(self.stats)} columns ({Path(path).name})")
        stats_table.add_columns("column", "dtype", "missing", "distinct", "shape", "summary")
        for s in self.stats:
            name = f"{s['column']} ◎" if s["target"] else s["column"]
            stats_table.add_row(name, s["dtype"], f"{s['missing']:.0f}%", str(s["distinct"]), s["shape"],
                                s["summary"])
        lines = []
        for target in targets or []:
            if any(s["column"] == target for s in self.stats):
                lines.append(f"[b]label distribution of {target}[/b]")
                lines += [f"  {label[:16]:<16} {count:>5}  {bar}" for label, count, bar in
                          label_distribution(Path(path), target)]
        labels.update("\n".join(lines))
        frame = pd.read_csv(path, nrows=rows)
        rows_table.add_columns(*[str(c) for c in frame.columns])
        for record in frame.itertuples(index=False):
            rows_table.add_row(*[_cell(v) for v in record])


def _cell(value: Any) -> str:
    text = "" if value is None or (isinstance(value, float) and value != value) else str(value)
    return text if len(text) <= 24 else text[:23] + "…"
