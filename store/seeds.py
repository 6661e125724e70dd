"""Seeds: the real tasks SandMLE imitates."""

from __future__ import annotations

from typing import Any, Sequence

from ._repo import Repo, Row, Rows
from .common import now
from .errors import NotFound


class Seeds(Repo):
    table = "seeds"
    json_fields = ("target_columns", "columns", "hints", "tags", "leaderboard")
    bool_fields = ("enabled",)

    def upsert(self, seed: dict[str, Any]) -> str:
        """Insert or replace a seed (keeps ``enabled``, ``tags`` and ``created_at`` of an existing row)."""
        with self.store.transaction() as db:
            existing = self.find(seed["id"])
            row = self.encode(seed)
            stamp = now()
            row["updated_at"] = stamp
            if existing:
                row["created_at"] = existing["created_at"]
                row.setdefault("enabled", int(existing["enabled"]))
                merged = sorted(set(existing["tags"]) | set(seed.get("tags", [])))
                row["tags"] = self.encode({"tags": merged})["tags"]
            else:
                row["created_at"] = stamp
            db.table(self.table).upsert(row, pk="id", alter=False)
        return seed["id"]

    def get(self, seed_id: str) -> Row:
        row = self.find(seed_id)
        if row is None:
            raise NotFound(f"no seed with id {seed_id!r} (see `sandmle seeds list`)")
        return row

    def find(self, seed_id: str) -> Row | None:
        return self._get("id = ?", (seed_id,))

    def list(self, *, modality: str | None = None, enabled: bool | None = None, text: str | None = None) -> Rows:
        where: list[str] = []
        params: list[str | int] = []
        if modality:
            where.append("s.modality = ?")
            params.append(modality)
        if enabled is not None:
            where.append("s.enabled = ?")
            params.append(int(enabled))
        if text:
            where.append("(s.id LIKE ? OR s.title LIKE ? OR s.tags LIKE ? OR s.metric LIKE ?)")
            params += [f"%{text}%"] * 4
        sql = (
            "SELECT s.*, (SELECT COUNT(*) FROM environments e WHERE e.seed_id = s.id) AS n_envs, "
            "(SELECT COUNT(*) FROM environments e WHERE e.seed_id = s.id AND e.status = 'verified') AS n_verified "
            "FROM seeds s"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY s.id"
        return self.decode_all(self.store.query(sql, tuple(params)))

    def set_enabled(self, seed_id: str, enabled: bool) -> None:
        self.get(seed_id)
        self.store.execute(
            "UPDATE seeds SET enabled = ?, updated_at = ? WHERE id = ?", (int(enabled), now(), seed_id)
        )

    def tag(self, seed_id: str, tag: str, *, remove: bool = False) -> Sequence[str]:
        with self.store.transaction():
            seed = self.get(seed_id)
            tags = set(seed["tags"])
            (tags.discard if remove else tags.add)(tag)
            result = sorted(tags)
            self.store.conn.execute(
                "UPDATE seeds SET tags = ?, updated_at = ? WHERE id = ?",
                (self.encode({"tags": result})["tags"], now(), seed_id),
            )
        return result

    def count(self) -> int:
        return self.store.db.table("seeds").count
