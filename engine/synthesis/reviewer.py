"""The Reviewer: the description must agree with the data — every column named, row counts right, the metric and
the exact submission columns stated, the sample submission in that format, media referenced where present."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..envs.layout import GradeSpec


def review(env_dir: Path, spec: GradeSpec) -> list[str]:
    pub = env_dir / "public"
    text = (pub / "description.md").read_text(encoding="utf-8")
    problems: list[str] = []
    train = pd.read_csv(pub / "train.csv", nrows=5)
    test = pd.read_csv(pub / "test.csv", nrows=5)
    sample = pd.read_csv(pub / "sample_submission.csv", nrows=5)
    named = set(re.findall(r"`([^`]+)`", text))
    for col in list(train.columns) + list(test.columns):
        if col not in named:
            problems.append(f"the description never names column {col!r}")
    if spec.metric not in text:
        problems.append(f"the description does not state the metric {spec.metric!r}")
    expected = [spec.id_column, *spec.prediction_columns]
    if ",".join(expected) not in text:
        problems.append(f"the description does not show the submission header {','.join(expected)}")
    if list(sample.columns) != expected:
        problems.append(f"sample_submission.csv columns {list(sample.columns)} differ from {expected}")
    n_train = len(pd.read_csv(pub / "train.csv", usecols=[0]))
    n_test = len(pd.read_csv(pub / "test.csv", usecols=[0]))
    if f"{n_train} rows" not in text:
        problems.append(f"the description does not give the training size ({n_train} rows)")
    if f"{n_test} rows" not in text:
        problems.append(f"the description does not give the test size ({n_test} rows)")
    if any((pub / d).is_dir() for d in ("train", "test")) and "train/" not in text:
        problems.append("media folders exist but the description does not mention them")
    return problems

