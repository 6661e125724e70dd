"""Shared plumbing of the repositories: JSON columns in and out."""

from __future__ import annotations

from typing import Any, Iterable

from . import process
from .common import dumps, loads


class Repo:
    table: str = ""
    json_fields: tuple[str, ...] = ()
    bool_fields: tuple[str, ...] = ()

    def __init__(self, store):
        self.store = store

    def encode(self, row: dict[str, Any]) -> dict[str, Any]:
        out = dict(row)
        for key in self.json_fields:
            if key in out and out[key] is not None and not isinstance(out[key], str):
                out[key] = dumps(out[key])
        for key in self.bool_fields:
            if key in out and out[key] is not None:
                out[key] = int(bool(out[key]))
        return out

    def decode(self, row: dict[str, Any] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        out = dict(row)
        for key in self.json_fields:
            if key in out and isinstance(out[key], str):
                out[key] = loads(out[key])
        for key in self.bool_fields:
            if key in out and out[key] is not None:
                out[key] = bool(out[key])
        return out

    def decode_all(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        return [self.decode(r) for r in rows]

    def _get(self, key_sql: str, params: tuple) -> dict[str, Any] | None:
        rows = self.store.query(f"SELECT * FROM {self.table} WHERE {key_sql}", params)
        return self.decode(rows[0]) if rows else None

    def stuck(self) -> list[dict[str, Any]]:
        """Rows still ``running`` whose owner process has ended (killed before it could close them)."""
        rows = self.store.query(f"SELECT * FROM {self.table} WHERE status = 'running'")
        return [r for r in self.decode_all(rows) if process.gone(r)]
