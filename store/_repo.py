"""Shared plumbing of the repositories: JSON and boolean columns in and out, lookups by key or id prefix."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Any, Generic, Iterable, Mapping, Protocol, TypeVar, cast

import sqlite_utils

from . import owners
from .common import dumps, loads
from .errors import NotFound

#: a decoded row: column name → value (JSON columns decoded, boolean columns as bool)
Row = dict[str, Any]
#: several rows (an alias: inside a repository class, ``list`` names its ``list`` method)
Rows = list[Row]
#: the parameters of a query
Params = tuple[str | int | float | None, ...]


class Database(Protocol):
    """What a repository uses of the store that holds it (:class:`store.db.Store`)."""

    db: sqlite_utils.Database

    @property
    def conn(self) -> sqlite3.Connection: ...

    def transaction(self) -> AbstractContextManager[sqlite_utils.Database]: ...

    def query(self, sql: str, params: Params = ()) -> Rows: ...

    def execute(self, sql: str, params: Params = ()) -> int: ...


RowT = TypeVar("RowT", bound=Mapping[str, object])


class Repo(Generic[RowT]):
    """A repository over one table whose rows it returns as ``RowT`` (a TypedDict of the table's columns)."""

    table: str = ""
    json_fields: tuple[str, ...] = ()
    bool_fields: tuple[str, ...] = ()

    def __init__(self, store: Database):
        self.store = store

    def _encode(self, row: Row) -> Row:
        out = dict(row)
        for key in self.json_fields:
            if key in out and out[key] is not None and not isinstance(out[key], str):
                out[key] = dumps(out[key])
        for key in self.bool_fields:
            if key in out and out[key] is not None:
                out[key] = int(bool(out[key]))
        return out

    def _decode(self, row: Row) -> Row:
        out = dict(row)
        for key in self.json_fields:
            if key in out and isinstance(out[key], str):
                out[key] = loads(out[key])
        for key in self.bool_fields:
            if key in out and out[key] is not None:
                out[key] = bool(out[key])
        return out

    def _decode_all(self, rows: Iterable[Row]) -> list[Row]:
        return [self._decode(r) for r in rows]

    def _get(self, key_sql: str, params: Params) -> Row | None:
        rows = self.store.query(f"SELECT * FROM {self.table} WHERE {key_sql}", params)
        return self._decode(rows[0]) if rows else None

    def stuck(self) -> list[RowT]:
        """Rows still ``running`` whose owner process has ended (killed before it could close them)."""
        rows = self.store.query(f"SELECT * FROM {self.table} WHERE status = 'running'")
        return cast(list[RowT], [r for r in self._decode_all(rows) if owners.gone(r)])

    def _by_prefix(self, prefix: str) -> Row | None:
        """The one row whose id starts with ``prefix``; None when none or several do."""
        rows = self.store.query(f"SELECT * FROM {self.table} WHERE id LIKE ? LIMIT 2", (f"{prefix}%",))
        return self._decode(rows[0]) if len(rows) == 1 else None


class KeyedRepo(Repo[RowT]):
    """A repository whose rows a user names by id: ``find`` (None when missing) and ``get`` (one line when
    missing), the same for every table."""

    #: what one row is called in the one-line "not found" error, and the command that lists the rows
    noun: str = "row"
    listing: str = ""
    #: whether :meth:`find` also takes a unique id prefix (as git does)
    by_prefix: bool = False

    def find(self, row_id: str) -> RowT | None:
        """The row with this id (or, where ``by_prefix``, this unique id prefix); None when there is none."""
        row = self._get("id = ?", (row_id,))
        if row is None and self.by_prefix:
            row = self._by_prefix(row_id)
        return cast(RowT | None, row)

    def get(self, row_id: str) -> RowT:
        """The row with this id (see :meth:`find`); :class:`NotFound` naming it when there is none."""
        row = self.find(row_id)
        if row is None:
            hint = f" (see `{self.listing}`)" if self.listing else ""
            raise NotFound(f"no {self.noun} with id {row_id!r}{hint}")
        return row
