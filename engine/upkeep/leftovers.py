"""What a killed process leaves behind, found and cleared: rows still ``running`` whose process is gone, the
run's cgroups (and any process still in them), its workspaces, half-built environment folders and the ``pending``
rows that reserved their ids. Everything here is judged by an owner (pid + start time + host) that has ended, so
clearing it never touches the work of a live process."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from store import Store, owners
from store.envs import EnvironmentRow

from ..envs.layout import BUILD_PREFIX, envs_root
from ..sandbox.cgroups import existing, run_cgroup_names
from ..sandbox.local import remove_workspace, stale_workspaces


@dataclass
class Finding:
    """One thing wrong, and what repairing it did."""

    check: str  #: which check found it ("stuck runs", "leftover workspaces", …)
    subject: str  #: the row id or the path
    problem: str  #: one line
    repaired: bool = False
    action: str | None = None  #: what the repair did
    fix: Callable[[], str] | None = None  #: repairs it and says how; None when it cannot be repaired safely

    def repair(self) -> None:
        if self.fix is not None and not self.repaired:
            self.action = self.fix()
            self.repaired = True

    def to_dict(self) -> dict:
        return {"check": self.check, "subject": self.subject, "problem": self.problem, "repaired": self.repaired,
                "action": self.action}


def find(store: Store) -> list[Finding]:
    """Leftovers of killed processes (each judged by its own owner, so they can be cleared in any order)."""
    return [*_stuck_runs(store), *_pending_envs(store), *_cgroups(store), *_workspaces(store),
            *_build_folders(store)]


def clear(store: Store) -> list[Finding]:
    """Find and clear every leftover of a killed process; returns what was cleared."""
    findings = find(store)
    for finding in findings:
        finding.repair()
    return findings


def _stuck_runs(store: Store) -> list[Finding]:
    stuck: list[tuple[str, str, int | None, Callable[[], object]]] = [
        *(("run", r["id"], r["pid"], partial(store.runs.mark_dead, [r])) for r in store.runs.stuck()),
        *(("sandbox run", r["id"], r["pid"], partial(store.sandbox.mark_dead, [r])) for r in store.sandbox.stuck())]
    return [Finding("stuck runs", run_id, f"{label} still 'running', but its process (pid {pid}) has ended",
                    fix=partial(_mark, mark)) for label, run_id, pid, mark in stuck]


def _mark(mark_dead: Callable[[], object]) -> str:
    mark_dead()
    return "marked dead"


def _pending_envs(store: Store) -> list[Finding]:
    out = []
    for env in store.envs.list(status="pending"):
        run = store.runs.find(env["run_id"]) if env["run_id"] else None
        if run is not None and run["status"] == "running" and not owners.gone(run):
            continue
        out.append(Finding("pending environments", env["id"], "reserved by a synthesis run that ended before "
                           "storing it", fix=partial(_drop_env, store, env)))
    return out


def _drop_env(store: Store, env: EnvironmentRow) -> str:
    store.envs.drop_pending(env["id"])
    folder = Path(env["dir"]) if env["dir"] else None
    if folder is not None and folder.resolve().is_relative_to(envs_root(store).resolve()) and folder.exists():
        shutil.rmtree(folder)
        return f"deleted the row and {folder}"
    return "deleted the row"


def _cgroups(store: Store) -> list[Finding]:
    out = []
    for name in run_cgroup_names():
        row = store.sandbox.find(name)
        if row is None or row["id"] != name or (row["status"] == "running" and not owners.gone(row)):
            continue  # another store's run, or one still going
        out.append(Finding("leftover cgroups", name, f"the cgroups of sandbox run {name} ({row['status']}) are "
                           "still there", fix=partial(_remove_cgroup, name)))
    return out


def _remove_cgroup(name: str) -> str:
    group = existing(name)
    if group is not None:
        group.remove()
    return "killed what was left in it and removed it"


def _workspaces(store: Store) -> list[Finding]:
    return [Finding("leftover workspaces", str(holder), "a workspace whose process has ended",
                    fix=partial(_remove_workspace, holder))
            for holder in stale_workspaces(store.data_dir / "workspaces")]


def _remove_workspace(holder: Path) -> str:
    remove_workspace(holder)
    return "unmounted and removed it"


def _build_folders(store: Store) -> list[Finding]:
    root = store.data_dir / "envs"
    folders = sorted(root.glob(f"{BUILD_PREFIX}*")) if root.is_dir() else []
    return [Finding("leftover build folders", str(folder), "an environment half-built by a process that has ended",
                    fix=partial(remove_folder, folder))
            for folder in folders if owners.tag_gone(_read(folder / ".owner"))]


def remove_folder(folder: Path) -> str:
    shutil.rmtree(folder)
    return "removed it"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
