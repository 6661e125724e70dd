"""Upkeep of a data dir: opening it the way every command does (shipped seeds in a fresh store, leftovers of killed
processes cleared: :func:`open_store`), the guard in front of every resume (:func:`resumable`), and the deep check behind ``sandmle doctor --deep`` (:mod:`.deep`)."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..seeds.load import load_shipped
from . import leftovers
from .deep import deep_check
from .leftovers import Finding
from .resume import resumable


def open_store(path: str | Path | None = None, *, clear_leftovers: bool = True) -> Store:
    """The store (``$SANDMLE_HOME`` unless ``path``), as every command opens it: a fresh one starts with the shipped
    seeds, and what killed processes left (runs still 'running', workspaces, cgroups, half-built environments) is
    cleared unless ``clear_leftovers`` is False (``doctor --deep`` wants to see it)."""
    store = Store(path, recover=clear_leftovers)
    if store.created:
        load_shipped(store)
    if clear_leftovers:
        leftovers.clear(store)
    return store


__all__ = ["Finding", "deep_check", "open_store", "resumable"]
