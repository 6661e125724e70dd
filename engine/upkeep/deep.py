"""``sandmle doctor --deep``: the store's integrity, every verified environment's files against their stored
hashes, environments audited before the lookup probe (can agent code find the test rows in a dataset its sandbox
reads?), boards that are not a population of distinct independent solutions (the 9-entry board environments were
stored with before, or a population board of an older version -- ``population-1`` counted copies as entries:
``sandmle envs reboard``), folders no row points at, and the leftovers of killed processes (:mod:`.leftovers`; on
a Docker daemon that answers, also the containers and volumes labelled ``sandmle`` whose process has ended).
``repair`` fixes what is safe to fix (leftovers, orphan folders) and says what it did; the rest is reported with
what to do."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from store import Store, sha256_file
from store.envs import EnvFile, EnvironmentRow

from ..envs.layout import AUDIT_CACHE, BUILD_PREFIX, board_of, board_outdated
from ..grading.audit.lookup import LOOKUP_VERSION
from ..sandbox import docker
from . import leftovers
from .leftovers import Finding, remove_folder

#: the folders under the data dir that hold one folder per environment row
ENV_FOLDERS = ("envs", "envs-imported")


def deep_check(store: Store, *, repair: bool = False) -> list[Finding]:
    """Every problem found (repaired ones marked so when ``repair``)."""
    findings = [*_integrity(store), *_env_files(store), *_boards(store), *_lookups(store), *_orphan_folders(store),
                *leftovers.find(store), *_docker_leftovers()]
    if repair:
        for finding in findings:
            finding.repair()
    return findings


def _boards(store: Store) -> list[Finding]:
    """Verified environments whose medals come from the verifier's own scripts (the 9-entry ``ladder`` board), from
    no board at all (a medal there means "ran the verifier's own script"), or from a population board of an older
    version (its entries count copies of one solution). Current population and paper boards, human boards pass, and
    so does a leaderboard an environment folder brought of its own (its author's, kept as it came)."""
    out = []
    for env in store.envs.list(status="verified"):
        entries = store.envs.leaderboard(env["id"])
        board = board_of(env.get("thresholds"), entries)
        if board in ("population", "paper"):
            stale = board_outdated({**(env.get("thresholds") or {}), "board": board})
            if stale:
                out.append(Finding("environment boards", env["id"], f"{stale} (`sandmle envs reboard {env['id']}` "
                                   "rebuilds it: one entry per distinct solution)"))
            continue
        if board == "human":
            continue
        if board is None and entries:
            continue  # a leaderboard its folder brought (its author's): kept as it came, like a competition's
        if env["split"] == "real" and not entries:
            continue  # a real competition without a leaderboard gets its population board when it is evaluated
        what = (f"its board is the {len(entries)}-entry board of the verifier's own scripts" if board == "ladder"
                else "it has no board")
        out.append(Finding("environment boards", env["id"], f"{what}: medals and the rank there measure nothing "
                           f"independent (`sandmle envs reboard {env['id']}` rebuilds it as a population board)"))
    return out


def stored_audit(store: Store, env: EnvironmentRow) -> dict | None:
    """An environment's last exploit audit: in its verification report (synthesized, added, reaudited), else in
    the audit cache beside the imported copies (a real competition, a task of the real suite)."""
    verification = env.get("verification") or {}
    report = verification.get("report") if isinstance(verification, dict) else None
    audit = (report or {}).get("audit") if isinstance(report, dict) else None
    if isinstance(audit, dict):
        return audit
    cached = Path(store.data_dir) / "envs-imported" / AUDIT_CACHE / f"{env['id']}.json"
    try:
        data = json.loads(cached.read_text())
        return data.get("report") if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _lookups(store: Store) -> list[Finding]:
    """Verified environments audited before the lookup probe existed (or by an older one): whether agent code can
    find their test rows in a dataset its sandbox reads was never asked (``sandmle envs audit`` asks it)."""
    out = []
    for env in store.envs.list(status="verified"):
        audit = stored_audit(store, env)
        lookup = audit.get("lookup") if isinstance(audit, dict) else None
        version = lookup.get("version") if isinstance(lookup, dict) else None
        if not isinstance(version, int) or version < LOOKUP_VERSION:
            what = "never audited" if audit is None else (
                "audited before the lookup probe existed" if lookup is None else
                f"audited by lookup probe version {version} (now {LOOKUP_VERSION})")
            out.append(Finding("environment audits", env["id"], f"{what}: can agent code look its answers up in a "
                               f"dataset its sandbox reads? (`sandmle envs audit {env['id']}` asks)"))
    return out


def _integrity(store: Store) -> list[Finding]:
    out = []
    verdict = store.integrity_check()
    if verdict != "ok":
        out.append(Finding("sqlite integrity", str(store.path), f"PRAGMA integrity_check: {verdict}"))
    for table, rowid, parent in store.foreign_key_problems():
        out.append(Finding("sqlite integrity", str(store.path),
                           f"table {table} row {rowid} points at a missing {parent} row"))
    return out


def _env_files(store: Store) -> list[Finding]:
    out = []
    for env in store.envs.list(status="verified"):
        folder = Path(env["dir"]) if env["dir"] else None
        if folder is None or not folder.is_dir():
            moved = _moved(store, env["id"])
            if moved is None:
                out.append(Finding("environment files", env["id"], f"its folder {folder} is missing"))
                continue
            out.append(Finding("environment files", env["id"], f"its folder {folder} is missing, but {moved} holds "
                               "it (the data dir moved?)", fix=partial(_relink, store, env, moved)))
            folder = moved
        changed = [f["path"] for f in store.envs.files(env["id"]) if _differs(folder / f["path"], f)]
        if changed:
            out.append(Finding("environment files", env["id"], f"{len(changed)} file(s) differ from their stored "
                               f"hashes: {', '.join(changed[:5])}" + (" …" if len(changed) > 5 else "")
                               + f" (synthesize it again, or `sandmle envs delete {env['id']}`)"))
    return out


def _moved(store: Store, env_id: str) -> Path | None:
    """The environment's folder under this data dir (``envs/<id>``), when its stored path no longer exists."""
    for name in ENV_FOLDERS:
        if (store.data_dir / name / env_id).is_dir():
            return store.data_dir / name / env_id
    return None


def _relink(store: Store, env: EnvironmentRow, folder: Path) -> str:
    store.envs.update(env["id"], dir=str(folder))
    return f"the row points at {folder} now"


def _differs(path: Path, row: EnvFile) -> bool:
    try:
        return path.stat().st_size != row["size"] or sha256_file(path) != row["sha256"]
    except OSError:
        return True


def _orphan_folders(store: Store) -> list[Finding]:
    folders = store.envs.folders()
    claimed = {Path(d).resolve() for d in folders.values() if d}
    ids = set(folders)  # envs/<id> of a row whose stored path is stale is not an orphan
    out = []
    for name in ENV_FOLDERS:
        root = store.data_dir / name
        for folder in sorted(root.iterdir()) if root.is_dir() else []:
            if (folder.is_dir() and not folder.name.startswith(BUILD_PREFIX) and folder.name != AUDIT_CACHE
                    and folder.name not in ids
                    and folder.resolve() not in claimed):
                out.append(Finding("orphan folders", str(folder), "no environment row points at this folder",
                                   fix=partial(remove_folder, folder)))
    return out


def _docker_leftovers() -> list[Finding]:
    """Workspace containers and volumes whose process has ended (none when no Docker daemon answers)."""
    client = docker.reachable()
    if client is None:
        return []
    return [Finding("docker leftovers", f"{leftover.kind} {leftover.name}",
                    f"a workspace {leftover.kind} whose process (pid {leftover.owner.split()[0]}) has ended",
                    fix=partial(_remove_docker, leftover)) for leftover in docker.leftovers(client)]


def _remove_docker(leftover: docker.Leftover) -> str:
    leftover.remove()
    return "removed it"
