"""Seeds: the real tasks SandMLE imitates."""

from __future__ import annotations

from typing import Mapping, NotRequired, Sequence, TypedDict, cast

from ._repo import KeyedRepo
from .common import JSON, now


class SeedRow(TypedDict):
    """A row of ``seeds`` (JSON columns decoded); ``list`` adds how many environments each has."""

    id: str
    title: str
    modality: str
    task_type: str
    metric: str
    lower_is_better: int
    id_column: str
    target_columns: list[str]
    columns: list[dict[str, JSON]]  #: {name, dtype, role, description?, values?}
    train_size: int
    test_size: int
    origin: str | None
    hints: dict[str, JSON]
    tags: list[str]
    description: str
    source_path: str | None
    source_format: str  #: sandmle | mlebench
    leaderboard: list[float] | None
    enabled: bool
    content_hash: str
    created_at: str
    updated_at: str
    n_envs: NotRequired[int]
    n_verified: NotRequired[int]


#: several seeds (an alias: inside the class, ``list`` names its ``list`` method)
SeedRows = list[SeedRow]


class Seeds(KeyedRepo[SeedRow]):
    table = "seeds"
    json_fields = ("target_columns", "columns", "hints", "tags", "leaderboard")
    bool_fields = ("enabled",)
    noun = "seed"
    listing = "sandmle seeds list"

    def upsert(self, seed: Mapping[str, object]) -> str:
        """Insert or replace a seed (keeps ``enabled``, ``tags`` and ``created_at`` of an existing row)."""
        with self.store.transaction() as db:
            seed_id = str(seed["id"])
            existing = self.find(seed_id)
            row = self._encode(dict(seed))
            stamp = now()
            row["updated_at"] = stamp
            if existing:
                row["created_at"] = existing["created_at"]
                row.setdefault("enabled", int(existing["enabled"]))
                given = seed.get("tags")
                merged = sorted(set(existing["tags"]) | set(given if isinstance(given, list) else []))
                row["tags"] = self._encode({"tags": merged})["tags"]
            else:
                row["created_at"] = stamp
            db.table(self.table).upsert(row, pk="id", alter=False)
        return seed_id

    def list(self, *, modality: str | None = None, enabled: bool | None = None, text: str | None = None) -> SeedRows:
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
        return cast(SeedRows, self._decode_all(self.store.query(sql, tuple(params))))

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
                (self._encode({"tags": result})["tags"], now(), seed_id),
            )
        return result

    def count(self) -> int:
        return self.store.db.table("seeds").count
