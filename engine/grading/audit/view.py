"""The agent's view of an environment, as the audit models it: :class:`Public` (the public files, the test ids and
the frames the attacks need), a :class:`Candidate` answer column read off it, how ids are compared
(:func:`norm_key`), and which columns of a table are media paths (:func:`media_columns`, :func:`media_files`).

What is read off the view, file by file, is :mod:`.sources`; this module reads no file but the media it checks exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


@dataclass
class Candidate:
    #: the file it comes from, relative to the environment folder (``public/crm_export.json``)
    source: str
    #: the column, key path or pattern, in words (``churn_ref``, ``customers.*.status``, ``token after the id``)
    column: str
    #: one value per test id (index: the test ids, in the answers' order); NaN where the source has none
    values: pd.Series
    #: a feature of test.csv that train.csv also has: an agent may use it, so it is judged against the train rows
    legit: bool = False
    #: the same column on the training rows (legit features only)
    train_values: pd.Series | None = None
    #: what the decoders compute once per candidate (numbers, ranks, codes)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def coverage(self) -> float:
        return float(self.values.notna().mean()) if len(self.values) else 0.0


@dataclass
class Public:
    """The agent's view of an environment: the public files, the test ids and frames the attacks need."""

    env_dir: Path
    id_column: str
    #: test ids as text, in the order of the answers
    test_ids: pd.Index
    test: pd.DataFrame
    train: pd.DataFrame
    #: test.csv's media-path columns (their files are the media, not sources)
    media_columns: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: public files over the size cap that could not be read (file, why): each one a finding, not audited
    unread: list[tuple[str, str]] = field(default_factory=list)

    @property
    def public(self) -> Path:
        return self.env_dir / "public"

    def rel(self, path: Path) -> str:
        return path.relative_to(self.env_dir).as_posix()


def norm_key(value: object) -> str:
    """One key as text, the way ids are compared: stripped, an integral number without its decimal part
    (``12.0`` → ``12``)."""
    text = str(value).strip()
    if text[-2:] == ".0" or "e" in text.lower():
        try:
            num = float(text)
        except ValueError:
            return text
        if np.isfinite(num) and num == round(num):
            return str(int(num))
    return text


def norm_keys(values: pd.Series | list | np.ndarray) -> pd.Series:
    """:func:`norm_key` of each value."""
    s = pd.Series(values, dtype=object) if not isinstance(values, pd.Series) else values
    if pd.api.types.is_integer_dtype(s):
        return s.astype(str)
    return pd.Series([norm_key(v) for v in s.to_numpy()], index=s.index, dtype=object)


def media_columns(frame: pd.DataFrame, public: Path) -> list[str]:
    """Columns of a frame whose values are paths of files under ``public`` (the media of image/audio/signal tasks)."""
    out = []
    for c in frame.columns:
        col = frame[c]
        if pd.api.types.is_numeric_dtype(col) or not len(col):
            continue
        head = col.dropna().astype(str).head(20)
        if not len(head) or not all(_path_like(v) for v in head):
            continue
        if all((public / v).is_file() for v in head):
            out.append(str(c))
    return out


_PATH = re.compile(r"[^\s]{0,240}\.[A-Za-z][A-Za-z0-9]{0,5}")


def _path_like(value: str) -> bool:
    return _PATH.fullmatch(value) is not None


def media_files(view: Public) -> set[str]:
    """The media files the train and test rows point to (paths relative to ``public/``)."""
    files: set[str] = set()
    for frame in (view.train, view.test):
        for c in view.media_columns:
            if c in frame.columns:
                files.update(frame[c].dropna().astype(str))
    return files
