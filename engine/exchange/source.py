"""One stored environment as every exporter reads it: its row, its grading spec and folder, its leaderboard, the
strong reference solution the verifier ran, and its line in the export's ``index.jsonl``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store import Store
from store.envs import EnvironmentRow, Leaderboard

from ..envs.layout import EnvSpec
from ..envs.provenance import provenance
from ..envs.tree import require_plain_tree
from ..errors import SandmleError
from ..synthesis.solutions import LADDER, render_solution

#: what the index names each format
FORMATS = ("mlebench", "harbor", "sandmle")
#: the RNG seed of the strong reference the leaderboard holds (the verifier's first ladder seed)
REFERENCE_SEED = 0


@dataclass
class Source:
    row: EnvironmentRow
    env: EnvSpec
    board: Leaderboard

    @classmethod
    def load(cls, store: Store, env_id: str) -> "Source":
        row = store.envs.get(env_id)
        if row["status"] != "verified":
            raise SandmleError(f"environment {env_id} is {row['status']}, not verified: only verified environments "
                               "are exported")
        env = EnvSpec.from_store(store, env_id)
        if not env.public.is_dir() or not env.answers.is_file():
            raise SandmleError(f"environment {env_id} has no files on disk ({env.dir})")
        # an export never carries a link (to a host file, or another environment's answers), a device or a FIFO
        require_plain_tree(env.dir, f"environment {env_id}")
        return cls(row=row, env=env, board=store.envs.leaderboard(env_id))

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def scores(self) -> list[float]:
        return [float(e["score"]) for e in self.board]

    def public_files(self) -> list[Path]:
        """The files and folders of ``public/`` an agent gets (sorted)."""
        return sorted(self.env.public.iterdir())

    def description(self) -> str:
        path = self.env.public / "description.md"
        return path.read_text(encoding="utf-8") if path.is_file() else f"# {self.row['title']}\n"

    def strong_solution(self) -> str:
        """The strong reference solution of the verifier's ladder: ``python solve.py [SEED] [OUT]`` in ``public/``."""
        return render_solution(LADDER["strong"])

    def index_row(self, fmt: str, path: Path) -> dict[str, Any]:
        row, th = self.row, self.row.get("thresholds") or None
        return {"id": self.id, "seed": row.get("seed_id"), "split": row.get("split"), "metric": row["metric"],
                "direction": "lower" if row["lower_is_better"] else "higher",
                "thresholds": {k: th[k] for k in ("gold", "silver", "bronze", "median") if k in th} if th else None,
                "leaderboard_size": len(self.board), "provenance": provenance(row), "format": fmt,
                "path": path.name}
