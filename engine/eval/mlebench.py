"""MLE-bench data directories as evaluation sets: ``mlebench:DIR`` selects every competition of a data directory
(``DIR/<id>/prepared/{public,private}``, as ``mlebench prepare`` leaves them) and ``mlebench:DIR:lite`` the 22
competitions of MLE-bench Lite, whose ids ship in ``mlebench_lite.txt``.

A competition's ``config.yaml``, ``description.md`` and ``leaderboard.csv`` are read from ``DIR/<id>/`` or, where
MLE-bench keeps them apart, from ``[mlebench] competitions/<id>/``. Competitions that are missing, not prepared,
or larger than a sandbox workspace may hold are listed as :class:`Skipped`, never run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from store import Store

from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..seeds.competition import env_from_mlebench
from ..seeds.mlebench import find_prepared, read_text

LITE_IDS_FILE = Path(__file__).with_name("mlebench_lite.txt")
SELECTOR_PREFIX = "mlebench:"


@dataclass(frozen=True)
class Skipped:
    """A competition an evaluation could not run, and why (never counted as a failure)."""

    id: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def lite_ids() -> list[str]:
    """The competition ids of MLE-bench Lite (MLE-bench's low-complexity split)."""
    lines = read_text(LITE_IDS_FILE).splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def parse_selector(part: str) -> tuple[Path, bool] | None:
    """``mlebench:DIR[:lite]`` → (DIR, lite); None for any other selector."""
    if not part.startswith(SELECTOR_PREFIX):
        return None
    rest = part[len(SELECTOR_PREFIX):]
    lite = rest.endswith(":lite")
    path = Path(rest[: -len(":lite")] if lite else rest).expanduser()
    if not path.is_dir():
        raise SandmleError(f"{path}: no such MLE-bench data directory", hint="mlebench:DIR or mlebench:DIR:lite")
    return path, lite


def _meta_dir(folder: Path, registry: Path | None) -> Path | None:
    for base in (folder, registry / folder.name if registry else None):
        if base is not None and (base / "config.yaml").is_file():
            return base
    return None


def data_dir_competitions(data_dir: Path, lite: bool, registry: str | Path | None,
                          cache_root: Path, *, metric: str | None = None,
                          store: Store | None = None) -> tuple[list[EnvSpec], list[Skipped]]:
    """The prepared competitions of an MLE-bench data directory as environments, and the ones skipped."""
    registry = Path(registry).expanduser() if registry else None
    ids = lite_ids() if lite else sorted(p.name for p in data_dir.iterdir() if p.is_dir())
    envs, skipped = [], []
    for comp_id in ids:
        folder = data_dir / comp_id
        meta = _meta_dir(folder, registry)
        public, private = find_prepared(folder)
        if not folder.is_dir():
            skipped.append(Skipped(comp_id, f"not in {data_dir}"))
        elif public is None or private is None:
            skipped.append(Skipped(comp_id, f"not prepared (run `mlebench prepare -c {comp_id}`)"))
        elif meta is None:
            skipped.append(Skipped(comp_id, "no config.yaml (set [mlebench] competitions to MLE-bench's "
                                            "mlebench/competitions folder)"))
        else:
            envs.append(env_from_mlebench(folder, cache_root, metric=metric, store=store, meta=meta))
    return envs, skipped


def data_mb(env: EnvSpec) -> float:
    """Size of the environment's public files in MB (what a sandbox workspace receives)."""
    return sum(p.stat().st_size for p in env.public.rglob("*") if p.is_file()) / 1e6


def quota_problem(env: EnvSpec, quota_mb: float) -> str | None:
    """Why the environment cannot run in a workspace of ``quota_mb`` (None when it fits)."""
    size = data_mb(env)
    if size <= quota_mb:
        return None
    return (f"data {size:,.0f} MB is larger than the workspace quota ({quota_mb:,.0f} MB, [sandbox] max_disk_mb)")
