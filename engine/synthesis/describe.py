"""The description writer: ``public/description.md`` from a scenario and its grading spec (goal, files, every
column, the metric and the exact submission format). The Reviewer checks the result against the data."""

from __future__ import annotations

from typing import Any, Mapping

from ..grading.metrics import get_metric

def column_rows(scenario: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(column, where, description) for every column of train.csv / test.csv."""
    if scenario.get("id_in_test") is False:
        rows = [(scenario["id_column"], "sample_submission.csv",
                 "Row identifier, only in the submission: test rows counted from 1 in the order of test.csv.")]
    else:
        rows = [(scenario["id_column"], "train, test", "Row identifier; also the first column of the submission.")]
    temporal = scenario.get("temporal")
    if temporal:
        rows.append((temporal["column"], "train, test", "Timestamp of the row (UTC); the test rows come after the training rows."))
    text = scenario.get("text") or {}
    if text.get("title_col"):
        rows.append((text["title_col"], "train, test", f"Short title of the {scenario['entity']} (free text)."))
    if text.get("text_col"):
        rows.append((text["text_col"], "train, test", f"Free text of the {scenario['entity']}."))
    tab = scenario.get("tabular") or {}
    for f in tab.get("numeric", []):
        rows.append((f["name"], "train, test", f.get("description", "numeric feature")))
    for c in tab.get("categorical", []):
        rows.append((c["name"], "train, test", f"{c.get('description', 'category')} (category; {len(c['levels'])} levels)."))
    if tab.get("code"):
        rows.append((tab["code"]["name"], "train, test", tab["code"]["description"]))
    if scenario.get("media_column"):
        ext = ".png" if "image" in scenario else ".npy"
        rows.append((scenario["media_column"], "train, test",
                     f"Relative path of the media file: train/<id>{ext} for training rows, test/<id>{ext} for test rows."))
    if scenario.get("group_column"):
        rows.append((scenario["group_column"], "train, test", f"Which {scenario['group_column']} the row was recorded in (a group)."))
    for t in scenario["target_columns"]:
        meta = next((m for m in scenario.get("targets_meta") or [] if m["name"] == t), None)
        desc = meta["description"] if meta else scenario.get("target_description", "target")
        rows.append((t, "train only", f"Target. {desc}"))
    return rows


def write_description(scenario: dict[str, Any], grade: dict[str, Any]) -> str:
    lines = [f"# {scenario['title']}", "", "## Overview", "", scenario["overview"], ""]
    lines += ["## Data", "",
              f"- `train.csv` — {scenario['n_train']} rows with the target column(s) "
              f"{', '.join('`' + t + '`' for t in scenario['target_columns'])}.",
              f"- `test.csv` — {scenario['n_test']} rows without the target.",
              "- `sample_submission.csv` — a valid submission in the expected format."]
    if scenario.get("media_column"):
        lines.append(f"- `train/` and `test/` — the media files. {scenario.get('media_note', '')}".rstrip())
    lines += ["", "### Columns", "", "| column | in | description |", "|---|---|---|"]
    lines += [f"| `{c}` | {where} | {desc} |" for c, where, desc in column_rows(scenario)]
    lines += scoring_sections(grade, scenario.get("classes"))
    return "\n".join(lines)


def scoring_sections(grade: Mapping[str, Any], classes: list[Any] | None) -> list[str]:
    """A description's lines from the classes on: how submissions are scored, the submission format and an example
    (every backend's description ends with these)."""
    metric = get_metric(grade["metric"])
    idc, pred = grade["id_column"], grade["prediction_columns"]
    better = "lower" if metric.lower_is_better else "higher"
    lines: list[str] = []
    if classes is not None and grade["task_type"] in ("multiclass", "ordinal", "binary"):
        lines += ["", "Classes: " + ", ".join(f"`{c}`" for c in classes) + "."]
    lines += ["", "## Evaluation", "", f"Submissions are scored with **{grade['metric']}**: {metric.wording}; "
              f"{better} is better."]
    if metric.non_negative:
        lines.append("Predictions must be non-negative; fitting the log of the target matches the metric.")
    lines += ["", "## Submission format", "",
              f"A CSV file with a header and one row per `{idc}` of `test.csv`, columns `{idc}` then "
              + ", ".join(f"`{c}`" for c in pred) + "."]
    if metric.prediction == "proba":
        lines.append("Each prediction column holds the probability of that class; rows should sum to 1.")
    elif metric.prediction == "value" and not metric.regression:  # a probability per target
        lines.append("Each prediction column holds a probability between 0 and 1.")
    elif grade["task_type"] in ("regression", "multi_target_regression"):
        lines.append("Each prediction column holds a number.")
    else:
        lines.append("The prediction column holds one class label per row.")
    return lines + ["", "```", ",".join([idc, *pred]), f"<{idc}>," + ",".join("..." for _ in pred), "```", ""]
