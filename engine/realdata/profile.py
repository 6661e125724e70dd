"""What kind each column of a real dataset is, read from its values: the facts the grounded designer matches a
seed's structure against (task kind of a target, feature kinds and counts).

Kinds: ``numeric`` (numbers with many values), ``binary`` (two values, any dtype), ``category`` (a few labels),
``text`` (free text: several words, mostly distinct, mostly letters), ``datetime``, ``identifier`` (distinct per
row: names, codes, running numbers — never a feature), ``constant`` (one value; dropped). The words-per-value of
text and category columns are kept, since a task's free text is told apart from labels by them
(``engine.synthesis.fidelity.column_kind``: three spaces or more on average is text).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

KINDS = ("numeric", "binary", "category", "text", "datetime", "identifier", "constant")
NAME_MAX = 40
#: most levels a label column may have and still be a category (more: an identifier or high-cardinality code)
MAX_LEVELS = 120


@dataclass
class ColumnProfile:
    name: str  #: as the source names it
    kind: str
    dtype: str
    n_unique: int
    missing: float  #: share of missing values
    #: share of the rarest of the values that hold ≥ 1% of rows (binary and category), else 0
    minority: float = 0.0
    integer: bool = False  #: every value a whole number (numeric)
    nonnegative: bool = False  #: no value below 0 (numeric)
    #: mean spaces per value (text and labels); what fidelity's text/category split reads
    spaces: float = 0.0
    #: share of letters among the non-space characters (text: prose vs. numbers written out)
    letters: float = 0.0
    #: mean, sd, min, max of a numeric column (6 significant digits): how copies of one dataset under other
    #: names are recognized (the held-out guard)
    moments: list[float] | None = None
    #: share of values holding a comma (labels: several values in one cell, "Laptop, Email")
    multi: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sanitize(name: str, taken: set[str] | None = None) -> str:
    """A column name a task file can carry (``^[A-Za-z_][A-Za-z0-9_]{0,40}$``): R's dots and spaces become
    underscores; a leading digit gets ``x``; a name already ``taken`` gets a number."""
    out = re.sub(r"[^A-Za-z0-9_]+", "_", str(name)).strip("_") or "col"
    out = re.sub(r"_+", "_", out)
    if not re.match(r"[A-Za-z_]", out):
        out = "x" + out
    out = out[:NAME_MAX]
    if taken is not None:
        base, i = out, 2
        while out.lower() in taken:
            out = f"{base[: NAME_MAX - 3]}_{i}"
            i += 1
        taken.add(out.lower())
    return out


def column_profile(name: str, values: Any) -> ColumnProfile:
    """The kind and facts of one column (a pandas Series; a sample of a long one says as much)."""
    import pandas as pd  # heavy: only when profiling

    n = len(values)
    missing = float(values.isna().mean()) if n else 1.0
    present = values.dropna()
    dtype = str(values.dtype)
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    n_unique = int(present.nunique()) if numeric else (int(present.astype(str).nunique()) if len(present) else 0)
    prof = ColumnProfile(name=str(name), kind="constant", dtype=dtype, n_unique=n_unique, missing=round(missing, 4))
    if n_unique <= 1:
        return prof
    if pd.api.types.is_datetime64_any_dtype(values):
        prof.kind = "datetime"
        return prof
    if numeric:
        num = present.to_numpy(dtype=float)
        prof.moments = moments(num)
        prof.integer = bool((num == num.round()).all())
        prof.nonnegative = bool((num >= 0).all())
        if n_unique <= 12:
            prof.minority = _minority(present)
        if n_unique == 2:
            prof.kind = "binary"
            return prof
        ratio = n_unique / max(1, len(present))
        # whole numbers distinct on every row (record numbers, tweet ids): names of rows, not measurements
        prof.kind = "identifier" if prof.integer and ratio >= 0.99 and len(present) >= 50 else "numeric"
        return prof
    if pd.api.types.is_bool_dtype(values) or n_unique == 2:
        prof.kind, prof.minority = "binary", _minority(present)
        return prof
    text = present.astype(str)
    sample = text.head(2000)
    prof.spaces = round(float(sample.str.count(" ").mean()), 3)
    chars = sample.str.replace(r"\s", "", regex=True)
    total = int(chars.str.len().sum())
    prof.letters = round(float(chars.str.count(r"[A-Za-z]").sum()) / max(1, total), 3)
    prof.multi = round(float(sample.str.contains(",", regex=False).mean()), 3)
    ratio = n_unique / max(1, len(present))
    if prof.spaces >= 4 and prof.letters >= 0.7 and n_unique >= 30:  # prose: five words or more, mostly letters
        prof.kind = "text"
        return prof
    if len(sample) and _dates(sample):
        prof.kind = "datetime"
        return prof
    if n_unique > MAX_LEVELS or (ratio > 0.9 and n_unique > 30):
        prof.kind = "identifier"
        return prof
    prof.kind, prof.minority = "category", _minority(present)
    return prof


def moments(values: Any) -> list[float]:
    """[mean, sd, min, max] of numbers, each to 6 significant digits."""
    v = np.asarray(values, dtype=float)
    with np.errstate(all="ignore"):
        return [float(f"{x:.6g}") for x in (v.mean(), v.std(), v.min(), v.max())]


def _minority(present: Any) -> float:
    counts = present.astype(str).value_counts(normalize=True)
    common = counts[counts >= 0.01]
    return round(float(common.min()), 4) if len(common) >= 2 else 0.0


def _dates(sample: Any) -> bool:
    import pandas as pd  # heavy

    head = sample.head(50)
    if not head.str.contains(r"\d{4}[-/]\d{1,2}|\d{1,2}[-/]\d{1,2}[-/]\d{2,4}").all():
        return False
    parsed = pd.to_datetime(head, errors="coerce", format="mixed")
    return bool(parsed.notna().all())


#: rows a profile reads (a random sample of a longer frame, fixed by its length)
PROFILE_ROWS = 5000


def profile(frame: Any) -> list[ColumnProfile]:
    """Every column's profile, in the frame's order (read on at most :data:`PROFILE_ROWS` rows; the plain numeric
    columns of a wide frame in one pass)."""
    import pandas as pd  # heavy: only when profiling

    if len(frame) > PROFILE_ROWS:
        frame = frame.sample(PROFILE_ROWS, random_state=len(frame))
    plain = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c]) or (
        pd.api.types.is_integer_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]))]
    fast: dict[Any, ColumnProfile] = {}
    if len(plain) > 20:
        arr = frame[plain].to_numpy(dtype=float)
        nan = np.isnan(arr)
        srt = np.sort(np.where(nan, np.inf, arr), axis=0)
        counts = (~nan).sum(axis=0)
        with np.errstate(invalid="ignore"):
            changes = (np.diff(srt, axis=0) != 0) & np.isfinite(srt[1:])
        uniques = np.where(counts > 0, 1 + changes.sum(axis=0), 0)
        integer = np.all(nan | (arr == np.round(np.where(nan, 0, arr))), axis=0)
        nonneg = np.all(nan | (np.where(nan, 0, arr) >= 0), axis=0)
        for j, c in enumerate(plain):
            ratio = uniques[j] / max(1, counts[j])
            minority = 0.0
            if 2 <= uniques[j] <= 12:
                _, cnt = np.unique(arr[~nan[:, j], j], return_counts=True)
                share = cnt / cnt.sum()
                common = share[share >= 0.01]
                minority = round(float(common.min()), 4) if len(common) >= 2 else 0.0
            kind = "constant" if uniques[j] <= 1 else "binary" if uniques[j] == 2 else \
                "identifier" if integer[j] and ratio >= 0.99 and counts[j] >= 50 else "numeric"
            fast[c] = ColumnProfile(name=str(c), kind=kind, dtype=str(frame[c].dtype), n_unique=int(uniques[j]),
                                    missing=round(float(nan[:, j].mean()), 4), minority=minority,
                                    integer=bool(integer[j]), nonnegative=bool(nonneg[j]),
                                    moments=moments(arr[~nan[:, j], j]) if counts[j] else None)
    return [fast[c] if c in fast else column_profile(c, frame[c]) for c in frame.columns]
