"""Copies of one dataset inside another, found by their rows: R packages ship the same data under other names,
renamed columns, recoded or dropped ones, a row more or fewer (``Ecdat/Hmda`` is ``AER/HMDA`` plus one row;
``heplots/peng`` is the 333 complete rows of ``palmerpenguins/penguins``). Moments of columns miss such copies;
rows do not.

:func:`compare` is the one test (the held-out guard, ``avoid_sources`` and the catalog's duplicates all use it):

1. every cell becomes a hash of its normalized value (numbers to 6 significant digits, so ``3750`` and ``3750.0``
   agree; text stripped and case-folded; a string column that is all numbers is numbers; every missing value one
   token);
2. columns are matched by their values, never their names: a column of the dataset with fewer rows is a candidate
   partner of a column of the other whose values hold at least :data:`VALUE_SHARE` of its own; columns with many
   values are matched first, and each candidate is kept only if the rows, hashed over the columns matched so far
   plus it, are still found in the other dataset (which tells apart the many yes/no columns of a survey);
3. the share of the smaller dataset's rows (hashed over the matched columns) found among the other's rows.

Two datasets are copies (:attr:`Match.copy`) when at least :data:`COPY_SHARE` of the smaller one's rows are inside
the other over at least :data:`COPY_COLUMNS` matched columns (all of its columns, if it has fewer), and far fewer
(at most :data:`CHANCE`) are found once each matched column is shuffled on its own: a few yes/no columns, small
counts or dates that a big survey holds in every combination are no copy; a column the others determine
(``expersq``, ``log(x)``, ``exper`` = ``age`` - ``educ`` - 6) adds no evidence. The thresholds come from the
catalog: of the 8,686 pairs its prefilter proposes, those that find 90-100 % of their rows with at most 28 % by
chance are, read one by one, the same study under two names or a subset of another; from 30 % up they are
coincidences (CPS 1985 in the 1991 survey's husbands at 31 %, ``wage1`` in ``labsup`` at 93 %).

Checking every pair of the catalog's 1,220 datasets row by row is out of reach, so :func:`candidates` finds the
pairs worth comparing from per-dataset :class:`Fingerprint` s (each column's distinct values hashed: all of them for
a column with few values, a fixed 1-in-16 sample of the hashes otherwise — a subset's sample is a subset of the
whole's sample, whatever their sizes), through an index of the hashes that are rare across the catalog (held by at
most :data:`COMMON` columns). A copy whose shared columns hold only common values (small counts, ages, years) can
escape that index: ``tests/test_realdata_copies.py`` checks every held-out dataset against every entry without it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

#: share of the smaller dataset's rows that must be found in the other for a copy
COPY_SHARE = 0.9
#: matched columns a copy needs (all of the smaller dataset's non-constant columns, if it has fewer)
COPY_COLUMNS = 3
#: most of the smaller dataset's rows found with its matched columns shuffled one by one: more, and the values
#: alone find rows (three yes/no columns, the dates of a table of every date), which is no copy
CHANCE = 0.3
#: a column is a candidate partner of another when this share of its distinct values is among the other's
VALUE_SHARE = 0.9
#: candidates tried per column (best by values shared, same name, nearby position), in all, and columns matched
TRIES = 6
MAX_TRIES = 60
MAX_COLUMNS = 16
#: a fingerprint keeps every distinct value of a column with at most this many, else a 1-in-16 sample
SMALL = 64
#: the sample: hashes whose top 4 bits are 0 (the same values in every dataset, so a subset's sample is a subset)
SAMPLE_BELOW = np.uint64(1 << 60)
#: a hash stored by more columns than this (0, 1, "yes", a year) is no evidence that two datasets share rows
COMMON = 48
#: a pair of datasets is compared when some column of one holds this share of a column of the other's hashes …
EVIDENCE_SHARE = 0.8
#: … and at least this many rare hashes are shared
EVIDENCE_HASHES = 2

_MISSING = np.uint64(0x9E3779B97F4A7C15)
_NUMBER = np.uint64(0x51ED270B1A3C5D7F)  # numbers and strings hash in different spaces
_MIX = np.uint64(0x100000001B3)


# ------------------------------------------------------------------------------------------------ cell hashes
def _number_codes(values: np.ndarray) -> np.ndarray:
    """Each float as one int64: its 6-significant-digit mantissa and its exponent (NaN → -1)."""
    v = np.asarray(values, dtype=float)
    out = np.full(v.shape, -1, dtype=np.int64)
    finite = np.isfinite(v)
    out[np.isposinf(v)] = -2
    out[np.isneginf(v)] = -3
    x = v[finite]
    nz = x != 0
    mant = np.zeros(x.shape, dtype=np.int64)
    expo = np.zeros(x.shape, dtype=np.int64)
    if nz.any():
        a = np.abs(x[nz])
        with np.errstate(all="ignore"):
            e = np.floor(np.log10(a)).astype(np.int64)
            m = np.rint(a / np.power(10.0, e - 5))
            hi = m >= 999999.5  # a rounding to 1,000,000 or a log10 one too small
            e[hi] += 1
            m[hi] = np.rint(a[hi] / np.power(10.0, e[hi] - 5))
            lo = m < 99999.5
            e[lo] -= 1
            m[lo] = np.rint(a[lo] / np.power(10.0, e[lo] - 5))
        mant[nz] = np.where(x[nz] < 0, -m, m).astype(np.int64)
        expo[nz] = e
    out[finite] = (mant * 1024 + (expo + 512)) * 8 + 4  # never negative-sentinel-shaped, exponent in 10 bits
    return out


def _hash_strings(values: Iterable[Any]) -> np.ndarray:
    """Text stripped, case-folded, runs of white space one space, hashed."""
    import pandas as pd  # heavy

    text = pd.Series(list(values), dtype=object).astype(str)
    if not len(text):
        return np.zeros(0, dtype=np.uint64)
    text = text.str.replace(r"\s+", " ", regex=True).str.strip().str.casefold()
    return pd.util.hash_array(text.to_numpy(dtype=object))


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _hash_uniques(uniques: Any) -> np.ndarray:
    """The hashes of a column's distinct values (missing ones excluded by the caller)."""
    import pandas as pd  # heavy

    if pd.api.types.is_bool_dtype(uniques):
        uniques = np.asarray(uniques, dtype=float)
    if pd.api.types.is_numeric_dtype(uniques):
        return pd.util.hash_array(_number_codes(np.asarray(uniques, dtype=float))) ^ _NUMBER
    if pd.api.types.is_datetime64_any_dtype(uniques):
        return _hash_strings(pd.Index(uniques).astype(str))
    values = list(uniques)
    if values and _is_number(values[0]):  # "1", "2.50": numbers written as text (the first says whether to look)
        numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
        if numbers.notna().all():
            return pd.util.hash_array(_number_codes(numbers.to_numpy(dtype=float))) ^ _NUMBER
    return _hash_strings(values)


def _column(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """A column's cell hashes and its distinct hashes (missing included where there is one)."""
    import pandas as pd  # heavy

    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:  # unhashable cells (lists): their text
        codes, uniques = pd.factorize(values.astype(str), use_na_sentinel=True)
    hashed = _hash_uniques(uniques)
    distinct = _unique(hashed)
    if (codes < 0).any():
        distinct = np.append(distinct, _MISSING)
    return np.append(hashed, _MISSING)[codes], distinct  # code -1 → the last: missing


def column_hashes(values: Any) -> np.ndarray:
    """One uint64 per cell of a column (a pandas Series): equal for values equal after normalization."""
    return _column(values)[0]


def column_distinct(values: Any) -> np.ndarray:
    """The distinct hashes of one column (a pandas Series), missing included: what a :class:`Fingerprint` keeps."""
    return _column(values)[1]


# ------------------------------------------------------------------------------------------------ the test
def _isin(values: np.ndarray, among: np.ndarray) -> np.ndarray:
    """``np.isin`` through pandas' hash table: 5 to 25 times faster than sorting, a few hundred to 350,000 rows
    (called straight, not through a Series: half the time of a small comparison was building the Series)."""
    from pandas.core.algorithms import isin  # heavy

    return np.asarray(isin(values, among), dtype=bool)


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, unsorted (a hash table: faster than sorting)."""
    import pandas as pd  # heavy

    return pd.unique(values)


@dataclass
class Hashed:
    """A dataset ready to compare: its key, column names, cell hashes, each column's distinct hashes and its
    numbers (NaN where a cell is not one: what tells a derived column, ``log(x)`` of ``x``, from an unrelated one)."""

    key: str
    names: list[str]
    hashes: np.ndarray
    distinct: list[np.ndarray] = field(default_factory=list)
    numbers: np.ndarray | None = None

    @classmethod
    def of(cls, key: str, frame: Any) -> "Hashed":
        import pandas as pd  # heavy

        columns = [_column(frame.iloc[:, j]) for j in range(frame.shape[1])]
        h = np.column_stack([c for c, _ in columns]) if columns else np.zeros((len(frame), 0), dtype=np.uint64)
        numbers = np.full(h.shape, np.nan)
        for j in range(frame.shape[1]):
            col = frame.iloc[:, j]
            if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
                numbers[:, j] = col.to_numpy(dtype=float, na_value=np.nan)
        return cls(key=key, names=[str(c) for c in frame.columns], hashes=h, distinct=[d for _, d in columns],
                   numbers=numbers)

    @property
    def rows(self) -> int:
        return int(self.hashes.shape[0])

    def index(self) -> tuple[np.ndarray, np.ndarray]:
        """Every column's distinct hashes in one sorted array, with the column of each (built once)."""
        cached = getattr(self, "_index", None)
        if cached is None:
            h = np.concatenate(self.distinct) if self.distinct else np.zeros(0, dtype=np.uint64)
            j = np.repeat(np.arange(len(self.distinct)), [len(d) for d in self.distinct])
            order = np.argsort(h)
            cached = (h[order], j[order])
            setattr(self, "_index", cached)
        return cached


@dataclass
class Match:
    """How much of one dataset's rows are inside another's: ``small`` is the one with fewer rows."""

    small: str
    big: str
    #: (column of small, column of big) matched by their values
    columns: list[tuple[str, str]]
    #: share of small's rows found among big's (over the matched columns), and the other way
    small_in_big: float
    big_in_small: float
    #: the same share with each matched column of small shuffled on its own: what its values find by chance
    chance: float
    #: non-constant columns of small (what "all its columns" means when it has fewer than COPY_COLUMNS)
    usable: int
    rows: tuple[int, int] = (0, 0)

    @property
    def copy(self) -> bool:
        """Whether the two are copies: most of the smaller one's rows inside the other, over enough columns, far
        more than their values alone would find."""
        enough = len(self.columns) >= min(COPY_COLUMNS, max(1, self.usable))
        return enough and self.small_in_big >= COPY_SHARE and self.chance <= CHANCE

    def to_row(self) -> list[Any]:
        return [self.small, self.big, round(self.small_in_big, 4), round(self.big_in_small, 4),
                round(self.chance, 4), len(self.columns)]

    def __str__(self) -> str:
        return (f"{self.small} ({self.rows[0]} rows) in {self.big} ({self.rows[1]} rows): {self.small_in_big:.1%} "
                f"of its rows over {len(self.columns)} columns (by chance {self.chance:.1%})")


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _overlaps(a: Hashed, b: Hashed) -> np.ndarray:
    """[i, j]: share of a's column i's distinct values that are among b's column j's (constant columns: 0)."""
    na, nb = len(a.distinct), len(b.distinct)
    out = np.zeros((na, nb))
    if not na or not nb:
        return out
    ha, ia = a.index()
    hb, jb = b.index()
    lo, hi = np.searchsorted(hb, ha, "left"), np.searchsorted(hb, ha, "right")
    n = hi - lo
    total = int(n.sum())
    if total:
        pos = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(total)  # every b entry of every a value
        out[:] = np.bincount(np.repeat(ia, n) * nb + jb[pos], minlength=na * nb).reshape(na, nb)
    sizes = np.array([len(d) for d in a.distinct], dtype=float)
    out /= np.maximum(sizes, 1)[:, None]
    out[sizes <= 1] = 0.0
    return out


def _mix(key: np.ndarray, column: np.ndarray) -> np.ndarray:
    """Row keys extended by one more column."""
    return (key * _MIX) ^ column


def compare(a: Hashed, b: Hashed) -> Match:
    """The row-level test: match columns by values, then the share of the smaller one's rows inside the other."""
    if (b.rows, b.key) < (a.rows, a.key):
        a, b = b, a
    over = _overlaps(a, b)
    usable = [i for i in range(len(a.distinct)) if len(a.distinct[i]) > 1]
    need = min(COPY_COLUMNS, max(1, len(usable)))
    none = Match(small=a.key, big=b.key, columns=[], small_in_big=0.0, big_in_small=0.0, chance=1.0,
                 usable=len(usable), rows=(a.rows, b.rows))
    if int((over[usable] >= VALUE_SHARE).any(axis=1).sum()) < need:
        return none  # too few columns of a have their values in b: no copy, whatever the rows
    cols, share, ka, kb, first = _match_columns(a, b, over, usable)
    if len(cols) < need:
        return none
    back = float(_isin(kb, ka).sum()) / max(1, b.rows)
    return Match(small=a.key, big=b.key, columns=[(a.names[i], b.names[j]) for i, j in cols], small_in_big=share,
                 big_in_small=back, chance=_chance(a, b, cols, first), usable=len(usable), rows=(a.rows, b.rows))


def _match_columns(a: Hashed, b: Hashed, over: np.ndarray, usable: list[int]
                   ) -> tuple[list[tuple[int, int]], float, np.ndarray, np.ndarray, np.ndarray | None]:
    """Columns of a (most values first) matched to b's greedily: a partner is kept when a's rows, hashed over the
    columns matched so far and it, are still :data:`COPY_SHARE` inside b's. Returns the pairs, that share, a's and
    b's row keys (b's only for its rows still able to match), and b's rows left after the first column."""
    order = sorted((i for i in usable if (over[i] >= VALUE_SHARE).any()), key=lambda i: -len(a.distinct[i]))
    ka = np.zeros(a.rows, dtype=np.uint64)
    rows = np.arange(b.rows)  # b's rows still able to match a row of a (their key so far is one of a's)
    first: np.ndarray | None = None  # … after the first column alone (what the shuffled rows can still find)
    kb = np.zeros(b.rows, dtype=np.uint64)
    cols: list[tuple[int, int]] = []
    share, tries = 0.0, 0
    for i in order:
        if len(cols) >= MAX_COLUMNS or tries >= MAX_TRIES:
            break
        used = {j for _, j in cols}
        cands = sorted((int(j) for j in np.flatnonzero(over[i] >= VALUE_SHARE) if j not in used),
                       key=lambda j: (-over[i, j], _norm(a.names[i]) != _norm(b.names[j]), abs(i - j)))[:TRIES]
        best, best_share = -1, 0.0
        for j in cands:
            tries += 1
            if first is None:  # one column: a's values among b's distinct ones, no need to read b's rows
                s = float(_isin(a.hashes[:, i], b.distinct[j]).mean())
            else:
                s = float(_isin(_mix(ka, a.hashes[:, i]), _mix(kb, b.hashes[rows, j])).mean())
            if s > best_share + 1e-12:
                best, best_share = j, s
        if best < 0 or best_share < COPY_SHARE:
            continue
        if first is None:
            rows = np.flatnonzero(_isin(b.hashes[:, best], a.distinct[i]))
            ka, kb = a.hashes[:, i].copy(), b.hashes[rows, best]
            first = rows
        else:
            ka, kb = _mix(ka, a.hashes[:, i]), _mix(kb, b.hashes[rows, best])
            keep = _isin(kb, ka)
            rows, kb = rows[keep], kb[keep]
        cols.append((i, best))
        share = best_share
    return cols, share, ka, kb, first


def _chance(a: Hashed, b: Hashed, cols: list[tuple[int, int]], rows: np.ndarray | None) -> float:
    """The share of a's rows found in b once each matched column of a is shuffled on its own (a fixed shuffle):
    high when the matched values are so few or so common that any rows of them are found (three yes/no columns,
    a date in a table of every date), low for a real copy. A column that the matched ones before it determine adds
    no evidence of its own and is left out (``expersq`` of ``exper``; ``exper`` = ``age`` - ``educ`` - 6)."""
    rng = np.random.default_rng(0)
    kept: list[tuple[int, int]] = []
    for i, j in cols:
        if not any(_determines(a, i0, i) for i0, _ in kept) and not _jointly(b, [j0 for _, j0 in kept], j):
            kept.append((i, j))
    ka = np.zeros(a.rows, dtype=np.uint64)
    kb = np.zeros(len(rows) if rows is not None else b.rows, dtype=np.uint64)
    for i, j in kept:
        ka = _mix(ka, a.hashes[rng.permutation(a.rows), i])
        kb = _mix(kb, b.hashes[rows, j] if rows is not None else b.hashes[:, j])
    return float(_isin(ka, kb).mean())


def _jointly(data: Hashed, cols: list[int], k: int) -> bool:
    """Whether column ``k`` is a function of ``cols`` together, on rows where their combinations repeat (on
    average twice or more): read on the larger dataset, where a formula's combinations repeat."""
    if len(cols) < 2:
        return False
    key = np.zeros(data.rows, dtype=np.uint64)
    for j in cols:
        key = _mix(key, data.hashes[:, j])
    n = len(_unique(key))
    return 2 * n <= data.rows and len(_unique(_mix(key, data.hashes[:, k]))) == n


def _determines(data: Hashed, i: int, k: int) -> bool:
    """Whether column ``k`` is a function of column ``i`` that says so: each value of ``i`` comes with one value of
    ``k``, and either ``i``'s values repeat (on average twice or more) or ``k`` moves with ``i`` in one direction
    (``log(x)`` of ``x``). Two columns distinct on every row are functions of each other and mean nothing by it."""
    x, y = data.hashes[:, i], data.hashes[:, k]
    n = len(_unique(x))
    if len(_unique(_mix(x, y))) != n:
        return False
    if 2 * n <= len(x):
        return True
    if data.numbers is None:
        return False
    u, v = data.numbers[:, i], data.numbers[:, k]
    ok = np.isfinite(u) & np.isfinite(v)
    if ok.sum() < 0.9 * len(u):
        return False
    order = np.argsort(u[ok], kind="stable")
    du, dv = np.diff(u[ok][order]), np.diff(v[ok][order])
    step = dv[du > 0]
    return bool(len(step)) and bool((step >= 0).all() or (step <= 0).all())


# ------------------------------------------------------------------------------------------------ the prefilter
@dataclass
class Fingerprint:
    """What the prefilter keeps of a dataset: its rows and, per column, its count of distinct values and their
    hashes (all of them up to :data:`SMALL`, else those below :data:`SAMPLE_BELOW`; a missing value is none)."""

    key: str
    rows: int
    names: list[str]
    distinct: list[int]
    stored: list[np.ndarray]

    @classmethod
    def of(cls, data: Hashed) -> "Fingerprint":
        stored = []
        for d in data.distinct:
            d = d[d != _MISSING]
            stored.append(d if len(d) <= SMALL else d[d < SAMPLE_BELOW])
        return cls(key=data.key, rows=data.rows, names=list(data.names), distinct=[len(d) for d in data.distinct],
                   stored=stored)

    def sampled(self, j: int) -> bool:
        """Whether column ``j`` keeps a sample (not every value)."""
        return self.distinct[j] > SMALL


def candidates(prints: Sequence[Fingerprint]) -> set[tuple[int, int]]:
    """Pairs of datasets (indices into ``prints``, smaller first) worth comparing row by row: a column of one and
    a column of the other share at least :data:`EVIDENCE_HASHES` hashes rare across ``prints`` (held by at most
    :data:`COMMON` columns), which are at least :data:`EVIDENCE_SHARE` of what one of them could share."""
    owner: list[int] = []
    sampled: list[bool] = []
    parts: list[np.ndarray] = []
    col_of: list[np.ndarray] = []
    for i, fp in enumerate(prints):
        for j, h in enumerate(fp.stored):
            col_of.append(np.full(len(h), len(owner), dtype=np.int64))
            parts.append(h)
            owner.append(i)
            sampled.append(fp.sampled(j))
    if not parts:
        return set()
    hashes, cols = np.concatenate(parts), np.concatenate(col_of)
    owner_a, sampled_a = np.array(owner), np.array(sampled)
    order = np.argsort(hashes, kind="stable")
    hashes, cols = hashes[order], cols[order]
    uniq, start, count = np.unique(hashes, return_index=True, return_counts=True)
    rare = np.repeat(count <= COMMON, count)
    low = hashes < SAMPLE_BELOW
    n = len(owner)
    n_rare = np.bincount(cols[rare], minlength=n)
    n_rare_low = np.bincount(cols[rare & low], minlength=n)
    pairs_a, pairs_b = [], []
    for size in range(2, COMMON + 1):
        groups = start[count == size]
        if not len(groups):
            continue
        members = cols[groups[:, None] + np.arange(size)[None, :]]
        ia, ib = np.triu_indices(size, 1)
        pairs_a.append(members[:, ia].ravel())
        pairs_b.append(members[:, ib].ravel())
    if not pairs_a:
        return set()
    ca, cb = np.concatenate(pairs_a), np.concatenate(pairs_b)
    ca, cb = np.minimum(ca, cb), np.maximum(ca, cb)
    keep = owner_a[ca] != owner_a[cb]
    pair_key, shared = np.unique(ca[keep] * n + cb[keep], return_counts=True)
    ca, cb = pair_key // n, pair_key % n
    # what column a could share with b: all its rare hashes, or (b keeps a sample) those in the sample's range
    could_ab = np.where(sampled_a[cb], n_rare_low[ca], n_rare[ca])
    could_ba = np.where(sampled_a[ca], n_rare_low[cb], n_rare[cb])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.maximum(shared / np.maximum(could_ab, 1), shared / np.maximum(could_ba, 1))
    ok = (shared >= EVIDENCE_HASHES) & (share >= EVIDENCE_SHARE)
    out = set()
    for a, b in zip(owner_a[ca[ok]], owner_a[cb[ok]]):
        a, b = int(a), int(b)
        small, big = (a, b) if (prints[a].rows, a) <= (prints[b].rows, b) else (b, a)
        out.add((small, big))
    return out


def scan(prints: Sequence[Fingerprint], load: Callable[[str], Any],
         pairs: Iterable[tuple[int, int]] | None = None) -> list[Match]:
    """Every pair of ``prints`` that are copies (:func:`compare` on :func:`candidates`), datasets read by ``load``
    (key → DataFrame) once each, in the order of the pairs."""
    todo = sorted(candidates(prints) if pairs is None else pairs)
    need: dict[int, int] = {}
    for a, b in todo:
        need[a] = need.get(a, 0) + 1
        need[b] = need.get(b, 0) + 1
    held: dict[int, Hashed] = {}
    found = []
    for a, b in todo:
        for i in (a, b):
            if i not in held:
                held[i] = Hashed.of(prints[i].key, load(prints[i].key))
        match = compare(held[a], held[b])
        if match.copy:
            found.append(match)
        for i in (a, b):
            need[i] -= 1
            if not need[i]:
                del held[i]
    return found


def fingerprint(key: str, frame: Any) -> Fingerprint:
    """A dataset's :class:`Fingerprint`, read from its frame."""
    distinct = [column_distinct(frame.iloc[:, j]) for j in range(frame.shape[1])]
    return Fingerprint.of(Hashed(key=key, names=[str(c) for c in frame.columns],
                                 hashes=np.zeros((len(frame), 0), dtype=np.uint64), distinct=distinct))


def save(file: Any, prints: Sequence[Fingerprint]) -> None:
    """Write fingerprints as one ``.npz`` to a path or an open binary file (the catalog's cache keeps them beside
    its JSON)."""

    stored = [h for fp in prints for h in fp.stored]
    meta = [{"key": fp.key, "rows": fp.rows, "names": fp.names, "distinct": fp.distinct} for fp in prints]
    np.savez_compressed(file, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
                        sizes=np.array([len(h) for h in stored], dtype=np.int64),
                        hashes=np.concatenate(stored) if stored else np.zeros(0, dtype=np.uint64))


def read(path: Any) -> list[Fingerprint]:
    """Fingerprints written by :func:`save`."""

    with np.load(path) as data:
        meta = json.loads(data["meta"].tobytes().decode())
        parts = np.split(data["hashes"], np.cumsum(data["sizes"])[:-1]) if len(data["sizes"]) else []
    out, at = [], 0
    for m in meta:
        n = len(m["names"])
        out.append(Fingerprint(key=m["key"], rows=int(m["rows"]), names=list(m["names"]),
                               distinct=[int(d) for d in m["distinct"]], stored=list(parts[at:at + n])))
        at += n
    return out
