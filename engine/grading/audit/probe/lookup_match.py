"""How the lookup probe matches test.csv's rows to a table it can read (part of the probe: copied into the
sandbox beside ``lookup_probe.py``, which imports it; the engine never imports either).

A well-spread test column (nearly unique values) is fitted to a table column, exactly or up to an affine rescaling
a·x + b (:func:`affine`), which pairs test rows with table rows; every other test column is confirmed on those
pairs. Where no column is well spread (small integers, categories), whole rows are matched exactly, one column at a
time (:func:`_exact_join`). A table is a *found* source when it holds the test rows (95%) and either most of them
pick out one table row or every test column matched; the answers are its other columns on the joined rows.
"""

import math
import time

import numpy as np
import pandas as pd

#: a table is a source when it holds at least this share of the test rows
FOUND_ROWS = 0.5
#: a test column matches a table column when this share of its distinct values is found there
COLUMN_COVER = 0.95
#: columns with fewer distinct values than this are too coarse to anchor a join on their own
ANCHOR_DISTINCT = 5


# --------------------------------------------------------------------------------------------- the test rows
def numeric(values):
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    return pd.to_numeric(values, errors="coerce").astype(float)


def text(values):
    """Values as normalized text, an object array with None where missing (never pandas' NA, whose comparisons
    raise)."""
    out = values.astype("string").str.strip().str.lower()
    return np.array([None if v is pd.NA else v for v in out], dtype=object)


class Test:
    """test.csv's columns, as numbers (where they parse) and as normalized text."""

    def __init__(self, frame, id_column):
        self.ids = frame[id_column].astype(str).tolist() if id_column in frame.columns else \
            [str(i) for i in range(len(frame))]
        feats = frame.drop(columns=[c for c in frame.columns if c == id_column])
        self.n = len(frame)
        self.num, self.txt = {}, {}
        for c in feats.columns:
            x = numeric(feats[c])
            if x.notna().mean() >= 0.9 and x.nunique() > 1:
                self.num[c] = x.to_numpy()
            elif feats[c].nunique() > 1:
                self.txt[c] = text(feats[c])


# --------------------------------------------------------------------------------------------- matching
def _tol(values):
    finite = values[np.isfinite(values)]
    scale = float(np.max(np.abs(finite))) if len(finite) else 1.0
    return 1e-6 * max(scale, 1e-9)


def _uniq(values):
    return np.unique(values[np.isfinite(values)])


def _cover_sorted(xs, ss, a, b):
    """The share of the (sorted, distinct) test values xs found in a·ss + b (ss sorted, distinct)."""
    if not len(xs) or not len(ss):
        return 0.0
    t = a * ss + b
    if a < 0:
        t = t[::-1]
    idx = np.clip(np.searchsorted(t, xs), 1, len(t) - 1) if len(t) > 1 else np.zeros(len(xs), dtype=int)
    near = np.minimum(np.abs(t[idx] - xs), np.abs(t[idx - 1] - xs)) if len(t) > 1 else np.abs(t[0] - xs)
    return float(np.mean(near <= _tol(xs)))


def cover(x, s, a=1.0, b=0.0):
    """The share of x's distinct values found in a·s + b (within a relative tolerance)."""
    return _cover_sorted(_uniq(x), _uniq(s), a, b)


def _hits(points, ss, A, B, tol):
    """For each line (A[h], B[h]): how many of ``points`` have a table value v with |A·v + B − point| <= tol."""
    pred = (points[None, :] - B[:, None]) / A[:, None]
    idx = np.clip(np.searchsorted(ss, pred), 1, len(ss) - 1)
    near = np.minimum(np.abs(A[:, None] * ss[idx] + B[:, None] - points[None, :]),
                      np.abs(A[:, None] * ss[idx - 1] + B[:, None] - points[None, :]))
    return (near <= tol).sum(axis=1)


def affine(x, s, k=None):
    """(a, b, cover) with x's values inside a·s + b, or None. The test rows are a sample of the table's, so their
    quantiles give a first (a, b) for each orientation; the exact map is then found among the lines through the
    table values nearest to where two well-separated test values should sit, each line checked on a few more test
    values at once (vectorized), the survivors on all of them."""
    xs, ss = _uniq(x), _uniq(s)
    if len(xs) < ANCHOR_DISTINCT or len(ss) < len(xs) or np.ptp(ss) == 0:
        return None
    k = k or int(min(25, max(6, 0.1 * len(ss))))  # how far the quantiles' guess may be off, in table values
    tol = _tol(xs)
    q = np.linspace(0.05, 0.95, 19)
    qx = np.quantile(x[np.isfinite(x)], q)
    lo, hi = xs[len(xs) // 10], xs[-1 - len(xs) // 10]
    probe = xs[np.linspace(0, len(xs) - 1, min(8, len(xs))).astype(int)]
    best = None
    for sign in (1, -1):
        qs = np.quantile(s[np.isfinite(s)], q if sign > 0 else 1 - q)
        if np.ptp(qs) == 0:
            continue
        a0, b0 = np.polyfit(qs, qx, 1)
        if a0 == 0 or not np.isfinite(a0) or a0 * sign < 0:
            continue
        near = []
        for v in (lo, hi):
            i = int(np.searchsorted(ss, (v - b0) / a0))
            near.append(ss[max(0, i - k): i + k])
        S_lo, S_hi = np.meshgrid(near[0], near[1], indexing="ij")
        S_lo, S_hi = S_lo.ravel(), S_hi.ravel()
        ok = S_hi != S_lo
        if not ok.any():
            continue
        A = (hi - lo) / (S_hi[ok] - S_lo[ok])
        B = lo - A * S_lo[ok]
        good = _hits(probe, ss, A, B, tol) >= len(probe) - 1
        for a, b in zip(A[good][:20], B[good][:20]):
            c = _cover_sorted(xs, ss, float(a), float(b))
            if best is None or c > best[2]:
                best = (float(a), float(b), c)
            if c >= 0.999:
                return best
    return best if best is not None and best[2] >= COLUMN_COVER else None


def _quantize(values, a, b, step):
    return np.round((a * values + b) / step)


def _pairs(x, s, a, b):
    """Test row -> table row, by the nearest value of a·s + b, for the test rows whose value is unique in the table
    (within tolerance): the row correspondence a well-spread column gives."""
    t = a * s + b
    ok = np.isfinite(t)
    order = np.argsort(t[ok])
    tv, rows = t[ok][order], np.flatnonzero(ok)[order]
    if len(tv) < 2:
        return {}
    tol = _tol(x)
    idx = np.clip(np.searchsorted(tv, x), 1, len(tv) - 1)
    left = np.abs(tv[idx - 1] - x) < np.abs(tv[idx] - x)
    j = np.where(left, idx - 1, idx)
    out = {}
    for i in range(len(x)):
        if not np.isfinite(x[i]) or abs(tv[j[i]] - x[i]) > tol:
            continue
        lo, hi = np.searchsorted(tv, x[i] - tol), np.searchsorted(tv, x[i] + tol, side="right")
        if hi - lo == 1:
            out[i] = int(rows[j[i]])
    return out


def _confirm(x, s, pairs):
    """(a, b) when x = a·s + b on the paired rows (95% of them), else None."""
    i = np.fromiter(pairs.keys(), dtype=int)
    j = np.fromiter(pairs.values(), dtype=int)
    xi, sj = x[i], s[j]
    ok = np.isfinite(xi) & np.isfinite(sj)
    if ok.sum() < 10:
        return None
    xi, sj = xi[ok], sj[ok]
    if np.ptp(xi) == 0:
        return None
    if np.mean(np.abs(xi - sj) <= _tol(xi)) >= COLUMN_COVER:
        return 1.0, 0.0
    if np.ptp(sj) == 0:
        return None
    a, b = np.polyfit(sj, xi, 1)
    if a != 0 and np.mean(np.abs(xi - (a * sj + b)) <= _tol(xi) * 10) >= COLUMN_COVER:
        return float(a), float(b)
    return None


def _shape(values):
    """Values standardized robustly (median, interquartile range), sorted: the same for a·s + b (a > 0)."""
    v = values[np.isfinite(values)]
    q1, med, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    scale = (q3 - q1) or np.std(v) or 1.0
    return np.sort((v - med) / scale)


def _alike(x, s):
    """Whether x could be a sample of a·s + b for some a ≠ 0: the Kolmogorov–Smirnov distance of the standardized
    values (either orientation) is small. A cheap filter before :func:`affine`."""
    zx = _shape(x)
    for zs in (_shape(s), _shape(-s)):
        grid = np.concatenate([zx, zs])
        fx = np.searchsorted(zx, grid, side="right") / len(zx)
        fs = np.searchsorted(zs, grid, side="right") / len(zs)
        if np.max(np.abs(fx - fs)) <= 0.3:
            return True
    return False


def _seed_fits(x, fnum):
    """Table columns that hold x's values, exactly or up to a·s + b: (column, a, b), exact ones first."""
    exact = [(d, 1.0, 0.0) for d, s in fnum.items() if cover(x, s) >= COLUMN_COVER]
    fits = []
    nx = len(_uniq(x))
    for d, s in fnum.items():
        if any(d == e[0] for e in exact) or len(_uniq(s)) < nx or not _alike(x, s):
            continue
        fit = affine(x, s)
        if fit is not None:
            fits.append((d, fit[0], fit[1]))
    return exact + fits


def match(test, frame, budget_end):
    """How the test rows sit in ``frame``: None, or the matched columns, the share of test rows found and the
    answers (the table's other columns on the joined rows).

    A well-spread test column (its values nearly unique) is fitted to a table column, exactly or affinely; that
    pairs test rows with table rows; every other test column is then confirmed on those pairs (x = a·s + b with a
    and b fitted on the pairs). Enough confirmed columns make a match, and the test rows are joined on all of
    them."""
    if len(frame) < 0.9 * test.n or frame.shape[1] < 2:
        return None
    fnum = {}
    for c in frame.columns:
        s = numeric(frame[c])
        if s.notna().mean() >= 0.5 and s.nunique() > 1:
            fnum[c] = s.to_numpy()
    ftxt = {c: text(frame[c]) for c in frame.columns if frame[c].nunique() > 1}
    wanted = len(test.num) + len(test.txt)
    need = min(3, wanted)
    seeds = sorted((c for c, x in test.num.items() if len(np.unique(x)) >= max(ANCHOR_DISTINCT, 0.5 * test.n)),
                   key=lambda c: -len(np.unique(test.num[c])))[:3]
    best = None
    for c1 in seeds:
        for d1, a1, b1 in _seed_fits(test.num[c1], fnum):
            if time.monotonic() > budget_end:
                return None
            pairs = _pairs(test.num[c1], fnum[d1], a1, b1)
            if len(pairs) < max(10, 0.3 * test.n):
                continue
            keys, used = [(c1, d1, a1, b1)], {d1}
            for c, x in test.num.items():
                if c == c1:
                    continue
                for d, s in fnum.items():
                    if d not in used:
                        fit = _confirm(x, s, pairs)
                        if fit is not None:
                            keys.append((c, d, fit[0], fit[1]))
                            used.add(d)
                            break
            tkeys = []
            i = np.fromiter(pairs.keys(), dtype=int)
            j = np.fromiter(pairs.values(), dtype=int)
            for c, x in test.txt.items():
                for d, s in ftxt.items():
                    if d not in used and np.mean(x[i] == s[j]) >= COLUMN_COVER:
                        tkeys.append((c, d))
                        used.add(d)
                        break
            if len(keys) + len(tkeys) >= need and (best is None or len(keys) + len(tkeys) > best[2]):
                best = (keys, tkeys, len(keys) + len(tkeys), used)
        if best is not None and best[2] >= need:
            break
    if best is None:
        return _exact_join(test, frame, fnum, ftxt, need)
    keys, tkeys, _, used = best
    return _join(test, frame, fnum, ftxt, keys, tkeys, used)


def _keys(test, frame_cols, keys, tkeys):
    """The join frames of the test rows and the table's on the matched columns (numbers quantized)."""
    fnum, ftxt = frame_cols
    left, right = {}, {}
    for i, (c, d, a, b) in enumerate(keys):
        x = test.num[c]
        step = max(_tol(x) * 10, 1e-12)
        left[f"k{i}"] = _quantize(x, 1.0, 0.0, step)
        right[f"k{i}"] = _quantize(fnum[d], a, b, step)
    for i, (c, d) in enumerate(tkeys):
        left[f"t{i}"] = test.txt[c]
        right[f"t{i}"] = ftxt[d]
    L = pd.DataFrame(left)
    L["_row"] = np.arange(test.n)
    R = pd.DataFrame(right)
    R["_src"] = np.arange(len(R))
    return L, R


def _matches(test, frame_cols, keys, tkeys):
    """Per test row with a match, how many table rows match it on every matched column."""
    L, R = _keys(test, frame_cols, keys, tkeys)
    on = [c for c in L.columns if c != "_row"]
    joined = L.merge(R, on=on, how="inner")
    return joined, joined.groupby("_row")["_src"].nunique()


def _exact_join(test, frame, fnum, ftxt, need):
    """No well-spread column to pair rows on (small integers, categories): the test columns whose every value a
    table column holds, chosen one at a time (most distinct first) as the table column that keeps the most test
    rows matched, the fewest table rows per test row; then the rows joined on all of them."""
    cols = (fnum, ftxt)
    cands = {}
    for c, x in test.num.items():
        cands[("n", c)] = [d for d, s in fnum.items() if cover(x, s) >= COLUMN_COVER]
    for c, x in test.txt.items():
        vals = set(v for v in x if v is not None and v == v)
        cands[("t", c)] = [d for d, s in ftxt.items() if vals and len(vals & set(s)) >= COLUMN_COVER * len(vals)]
    order = sorted(cands, key=lambda k: -len(set((test.num if k[0] == "n" else test.txt)[k[1]])))
    keys: list = []
    tkeys: list = []
    used: set = set()
    for kind, c in order:
        best = None
        for d in cands[(kind, c)]:
            if d in used:
                continue
            trial_k = keys + [(c, d, 1.0, 0.0)] if kind == "n" else keys
            trial_t = tkeys + [(c, d)] if kind == "t" else tkeys
            _, hits = _matches(test, cols, trial_k, trial_t)
            score = (len(hits) / max(test.n, 1), -float(hits.mean()) if len(hits) else 0.0)
            if score[0] >= 0.95 and (best is None or score > best[0]):
                best = (score, d)
        if best is not None:
            if kind == "n":
                keys.append((c, best[1], 1.0, 0.0))
            else:
                tkeys.append((c, best[1]))
            used.add(best[1])
    if len(keys) + len(tkeys) < max(need, 3 if len(test.num) + len(test.txt) >= 3 else need):
        return None
    return _join(test, frame, fnum, ftxt, keys, tkeys, used)


def _join(test, frame, fnum, ftxt, keys, tkeys, used):
    """The test rows joined to the table on the matched columns. A found source: the test rows are there (95%),
    and either most pick out one table row or every test column was matched (a whole-row copy; coarse columns of
    an unrelated table match many rows, never all of a test row). The answers: per test row, the most common value
    of each other column among its matching rows."""
    joined, hits = _matches(test, (fnum, ftxt), keys, tkeys)
    rows = len(hits) / max(test.n, 1)
    unique = float((hits == 1).sum()) / max(test.n, 1)
    whole = len(keys) + len(tkeys) == len(test.num) + len(test.txt)
    if rows < 0.95 or not (unique >= FOUND_ROWS or whole):
        return None
    answers: dict = {}
    groups = joined.groupby("_row")["_src"].apply(list)
    for c in frame.columns:
        if c in used or len(answers) >= 40:
            continue
        col = frame[c].reset_index(drop=True)
        vals: list = []
        for r in range(test.n):
            src = groups.get(r)
            if not src:
                vals.append(None)
                continue
            picked = col.iloc[src].dropna()
            vals.append(None if picked.empty else picked.mode().iloc[0])
        answers[str(c)] = [None if v is None or (isinstance(v, float) and not math.isfinite(v))
                           else (v.item() if hasattr(v, "item") else v) for v in vals]
    how = "exact" if all(a == 1.0 and b == 0.0 for *_, a, b in keys) else "affine"
    return {"rows": round(rows, 4), "unique": round(unique, 4), "how": how,
            "columns": [[c, str(d)] for c, d, *_ in keys] + [[c, str(d)] for c, d in tkeys],
            "answers": answers}
