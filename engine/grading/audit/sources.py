"""What an agent can read, as candidate answer columns: every column of every public file joined to the test ids
(or lined up with the test rows by order), key/value maps keyed by the test ids, the id strings and the row order,
media paths and the files beside the media, and the text around each test id in every text file.

A :class:`Candidate` (:mod:`.view`, with the view it is read off) is one such column: a value per test id (missing
where the source does not cover the id) and where it came from (the file and the column, in words).
:func:`candidates` reads them all; the attacks in :mod:`.decode` try to turn each into the answers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import numpy as np
import pandas as pd

# the view and its candidate columns live in .view; media_columns stays importable from here for callers
from .view import Candidate, Public, media_columns, media_files, norm_key, norm_keys  # noqa: F401


#: files larger than this are not read whole: a table is read in chunks (its rows that carry a test id, or all its
#: rows where it has one per test row); any other file is not audited, a finding (the environment is not verified)
MAX_BYTES = 256 * 2**20
#: the rows of a big table read at a time
CHUNK_ROWS = 100_000
#: a column is a key of the test rows when it holds at least this share of the test ids
KEY_COVERAGE = 0.5
#: suffixes read as tables, JSON, arrays; anything else that decodes as UTF-8 text is scanned as text
TABLES = {".csv": ",", ".tsv": "\t"}
COLUMNAR = (".parquet", ".pq", ".feather")
JSONS = (".json",)
JSON_LINES = (".jsonl", ".ndjson")
ARRAYS = (".npy",)
#: media and other binary files: listed (and declared or not), never read as a source
BINARY = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".webp", ".wav", ".aif", ".aiff", ".mp3",
          ".flac", ".ogg", ".mp4", ".avi", ".npz", ".pkl", ".pt", ".bin", ".zip", ".gz", ".tar", ".7z")
#: what separates a value from the id beside it in free text (markdown tables, `id: label`, `id=label`, CSV lines)
_SEPARATORS = re.compile(r"[\s,;|:=\t\"'`()\[\]{}<>]+")
_WALK_LIMIT = 5000


# ---------------------------------------------------------------------------------------------- tables and maps
def _key_column(frame: pd.DataFrame, ids: set[str]) -> str | None:
    """The column of ``frame`` that holds the test ids (most of them, each once), if any."""
    best, best_cov = None, KEY_COVERAGE
    for c in frame.columns:
        col = frame[c].dropna()
        if len(col) < KEY_COVERAGE * len(ids) or pd.api.types.is_float_dtype(col) and not (col == col.round()).all():
            continue
        probe = col.iloc[:: max(1, len(col) // 20)].head(25)
        if not any(str(v) in ids or norm_key(v) in ids for v in probe):
            continue
        keys = norm_keys(col)
        found = keys[keys.isin(ids)]
        cov = found.nunique() / max(len(ids), 1)
        if cov >= best_cov and found.nunique() >= 0.9 * len(found):
            best, best_cov = str(c), cov
    return best


def table_candidates(frame: pd.DataFrame, source: str, view: Public, prefix: str = "") -> list[Candidate]:
    """Every column of a table joined to the test ids on its key column, else lined up with the test rows when it
    has one row per test row; [] when it is neither."""
    if frame.empty or len(frame.columns) == 0:
        return []
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    ids = view.test_ids
    key = _key_column(frame, set(ids))
    if key is not None:
        keyed = frame.assign(_key=norm_keys(frame[key]).to_numpy()).drop_duplicates("_key").set_index("_key")
        aligned = keyed.reindex(ids)
        cols = [c for c in frame.columns if c != key]
        how = ""
    elif len(frame) == len(ids):
        aligned = frame.set_axis(ids)
        cols = list(frame.columns)
        how = " (by row order)"
    else:
        return []
    return [Candidate(source, f"{prefix}{c}{how}", aligned[c]) for c in cols if aligned[c].notna().any()]


def _records(obj: Any) -> pd.DataFrame | None:
    """A list of records or a dict of equal-length lists as a table."""
    if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj[:50]):
        return pd.json_normalize(obj)
    if isinstance(obj, dict) and obj and all(isinstance(v, list) for v in obj.values()):
        lengths = {len(v) for v in obj.values()}
        if len(lengths) == 1 and lengths != {0}:
            return pd.DataFrame(obj)
    return None


def json_candidates(obj: Any, source: str, view: Public, path: str = "", depth: int = 0,
                    budget: list[int] | None = None) -> list[Candidate]:
    """Maps keyed by the test ids (their values, or every field of record values), tables of records, lists with a
    value per test row — found anywhere in a JSON document (a few levels deep)."""
    budget = budget if budget is not None else [_WALK_LIMIT]
    budget[0] -= 1
    if budget[0] < 0 or depth > 5:
        return []
    ids = view.test_ids
    here = path or "$"
    out: list[Candidate] = []
    if isinstance(obj, dict) and obj:
        keys = norm_keys(list(obj.keys()))
        if keys.isin(set(ids)).sum() >= KEY_COVERAGE * len(ids):
            values = list(obj.values())
            if all(isinstance(v, dict) for v in values):
                table = pd.json_normalize(values).set_axis(keys)
                table = table[~table.index.duplicated()].reindex(ids)
                return [Candidate(source, f"{here}.<id>.{c}", table[c]) for c in table.columns if table[c].notna().any()]
            flat = pd.Series([v[0] if isinstance(v, list) and v else v for v in values], index=keys, dtype=object)
            flat = flat[~flat.index.duplicated()].reindex(ids)
            return [Candidate(source, f"{here}.<id>", flat)]
    table = _records(obj)
    if table is not None:
        out += table_candidates(table, source, view, prefix=f"{here}." if path else "")
    if isinstance(obj, list) and len(obj) == len(ids) and all(not isinstance(v, (dict, list)) for v in obj):
        out.append(Candidate(source, f"{here}[row] (by row order)", pd.Series(obj, index=ids, dtype=object)))
    children = obj.items() if isinstance(obj, dict) else enumerate(obj[:50]) if isinstance(obj, list) else []
    for k, v in children:
        if isinstance(v, (dict, list)):
            out += json_candidates(v, source, view, f"{here}.{k}" if isinstance(obj, dict) else f"{here}[{k}]",
                                   depth + 1, budget)
    return out


# ---------------------------------------------------------------------------------------------- text
def text_candidates(text: str, source: str, view: Public, labels: set[str] | None) -> list[Candidate]:
    """The token after each test id and the last token of its line (``id: label``, ``| id | label |``, ``id,label``),
    and any run of exactly one value per test row (labels written out in row order)."""
    ids = set(view.test_ids)
    after: dict[str, str] = {}
    last: dict[str, str] = {}
    run: list[str] = []
    runs: list[list[str]] = []
    n = len(view.test_ids)
    for line in text.splitlines():
        tokens = [t for t in _SEPARATORS.split(line) if t]
        for i, tok in enumerate(tokens):
            key = tok if tok in ids else norm_key(tok)
            if key in ids and key not in after and i + 1 < len(tokens):
                after[key], last[key] = tokens[i + 1], tokens[-1]
            if _value_like(tok, labels):
                run.append(tok)
            else:
                if len(run) == n:
                    runs.append(run)
                run = []
    if len(run) == n:
        runs.append(run)
    out = []
    if len(after) >= KEY_COVERAGE * n:
        idx = view.test_ids
        out.append(Candidate(source, "the token after each test id", pd.Series(after, dtype=object).reindex(idx)))
        out.append(Candidate(source, "the last token of each test id's line",
                             pd.Series(last, dtype=object).reindex(idx)))
    for i, r in enumerate(runs[:3]):
        out.append(Candidate(source, f"a run of {n} values (by row order{', #' + str(i + 1) if i else ''})",
                             pd.Series(r, index=view.test_ids, dtype=object)))
    return out


def _value_like(token: str, labels: set[str] | None) -> bool:
    if labels is not None:
        return token in labels
    try:
        float(token)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------- ids, order, media
def id_candidates(view: Public, source: str) -> list[Candidate]:
    """What the id strings and the row order could give away: the id's number, letters, first and last character,
    each of its parts, and each test row's position."""
    ids = pd.Series(view.test_ids, index=view.test_ids, dtype=object).astype(str)
    col = view.id_column
    out = [Candidate(source, "row position", pd.Series(np.arange(len(ids)), index=view.test_ids, dtype=float))]
    digits = ids.str.extract(r"(\d+)\D*$")[0]
    if digits.notna().mean() > 0.9:
        out.append(Candidate(source, f"{col}: its number", pd.to_numeric(digits, errors="coerce")))
    out.append(Candidate(source, f"{col}: its letters", ids.str.replace(r"[\d]+", "", regex=True)))
    out.append(Candidate(source, f"{col}: first character", ids.str[:1]))
    out.append(Candidate(source, f"{col}: last character", ids.str[-1:]))
    parts = ids.str.split(r"[_\-.:/ ]+", regex=True)
    width = int(parts.str.len().max()) if len(parts) else 0
    if 1 < width <= 6:
        for i in range(width):
            out.append(Candidate(source, f"{col}: part {i + 1}", parts.str[i]))
    return out


def media_path_candidates(view: Public) -> list[Candidate]:
    """The folder and the name parts of each test row's media file (``test/cat/001.png`` gives away ``cat``)."""
    out = []
    for c in view.media_columns:
        paths = view.test[c].astype(str)
        paths.index = view.test_ids if len(paths) == len(view.test_ids) else paths.index
        pure = paths.map(lambda p: PurePosixPath(p))
        out.append(Candidate("public/test.csv", f"{c}: folder", pure.map(lambda p: str(p.parent))))
        stems = pure.map(lambda p: p.stem)
        parts = stems.str.split(r"[_\-. ]+", regex=True)
        width = int(parts.str.len().max()) if len(parts) else 0
        if 1 < width <= 6:
            for i in range(width):
                out.append(Candidate("public/test.csv", f"{c}: name part {i + 1}", parts.str[i]))
        out.append(Candidate("public/test.csv", f"{c}: last character of the name", stems.str[-1:]))
    return out


def sidecar_candidates(view: Public, files: list[Path]) -> list[Candidate]:
    """Files named after a test row's id or media file that are not the media themselves (``test/ab12.json`` beside
    ``test/ab12.png``): their JSON fields or their text, per test row."""
    by_stem: dict[str, str] = {str(i): str(i) for i in view.test_ids}
    for c in view.media_columns:
        for i, p in zip(view.test_ids, view.test[c].astype(str)):
            by_stem[PurePosixPath(p).stem] = str(i)
    media = media_files(view)
    rows: dict[str, dict[str, Any]] = {}
    for path in files:
        rel = path.relative_to(view.public).as_posix()
        key = by_stem.get(path.stem)
        if key is None or rel in media or path.stat().st_size > 64 * 1024:
            continue
        record = _sidecar_record(path)
        if record:
            folder = PurePosixPath(rel).parent.as_posix()
            rows.setdefault(key, {}).update({f"{folder}/<id>{path.suffix}:{k}": v for k, v in record.items()})
    if len(rows) < KEY_COVERAGE * len(view.test_ids):
        return []
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(view.test_ids)
    return [Candidate("public/" + c.split(":", 1)[0], c.split(":", 1)[1] or "content", table[c]) for c in table.columns]


def _sidecar_record(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    if path.suffix.lower() in JSONS:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            flat = pd.json_normalize(data).iloc[0].to_dict() if data else {}
            return {str(k): v for k, v in flat.items() if not isinstance(v, (list, dict))}
    tokens = [t for t in _SEPARATORS.split(text) if t]
    return {"": text.strip()[:200], "first token": tokens[0] if tokens else None}


# ---------------------------------------------------------------------------------------------- files
def public_files(view: Public) -> list[Path]:
    return sorted(p for p in view.public.rglob("*") if p.is_file())


def _read_text(path: Path) -> str | None:
    """The file as UTF-8 text; None for a binary file (a NUL in its first 4 KB, or not UTF-8)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
            if b"\x00" in head:
                return None
            raw = head + f.read()
    except OSError:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def file_candidates(path: Path, view: Public, labels: set[str] | None) -> list[Candidate]:
    """The candidates of one public file, by its kind (table, JSON, array, text); [] for binary files."""
    rel, suffix = view.rel(path), path.suffix.lower()
    if suffix in BINARY:
        return []
    if path.stat().st_size > MAX_BYTES:
        if suffix in TABLES:
            return _big_table_candidates(path, rel, view)
        view.unread.append((rel, f"larger than {_cap()} and not a table, which is read in chunks"))
        view.skipped.append(f"{rel}: larger than {_cap()}, not read")
        return []
    try:
        if suffix in TABLES:
            frame = pd.read_csv(path, sep=TABLES[suffix], dtype=str, keep_default_na=True, low_memory=False)
            return table_candidates(frame, rel, view)
        if suffix in COLUMNAR:
            frame = pd.read_feather(path) if suffix == ".feather" else pd.read_parquet(path)
            return table_candidates(frame, rel, view)
        if suffix in ARRAYS:
            return _array_candidates(np.load(path, allow_pickle=False), rel, view)
    except (ValueError, OSError, ImportError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        view.skipped.append(f"{rel}: not readable as {suffix[1:]} ({str(exc).splitlines()[0][:80]}); read as text")
    text = _read_text(path)
    if text is None:
        return []
    if suffix in JSONS or suffix in JSON_LINES:
        try:
            obj: Any = json.loads(text) if suffix in JSONS else [json.loads(ln) for ln in text.splitlines() if ln.strip()]
        except ValueError:
            obj = None
        if obj is not None:
            return json_candidates(obj, rel, view) + text_candidates(text, rel, view, labels)
    return text_candidates(text, rel, view, labels)


def _cap() -> str:
    return f"{MAX_BYTES // 2**20} MB" if MAX_BYTES >= 2**20 else f"{MAX_BYTES // 2**10} KB"


def _big_table_candidates(path: Path, rel: str, view: Public) -> list[Candidate]:
    """A table over the size cap, read in chunks: the rows that carry a test id in any column (all a join to the
    test ids can use), or every row where it has exactly one per test row (the row-order view)."""
    ids, n = list(view.test_ids), len(view.test_ids)
    keyed: list[pd.DataFrame] = []
    head: list[pd.DataFrame] = []
    total = 0
    try:
        with pd.read_csv(path, sep=TABLES[path.suffix.lower()], dtype=str, keep_default_na=True,
                         chunksize=CHUNK_ROWS) as chunks:
            for chunk in chunks:
                if total <= n:
                    head.append(chunk)
                total += len(chunk)
                hit = chunk.isin(ids).any(axis=1)
                if hit.any():
                    keyed.append(chunk[hit])
    except (ValueError, OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        why = f"larger than {_cap()} and not readable in chunks ({str(exc).splitlines()[0][:80]})"
        view.unread.append((rel, why))
        view.skipped.append(f"{rel}: {why}")
        return []
    if total == n:
        return table_candidates(pd.concat(head, ignore_index=True), rel, view)
    return table_candidates(pd.concat(keyed, ignore_index=True), rel, view) if keyed else []


def _array_candidates(arr: np.ndarray, rel: str, view: Public) -> list[Candidate]:
    n = len(view.test_ids)
    if arr.ndim == 0 or arr.shape[0] != n or arr.ndim > 2 or (arr.ndim == 2 and arr.shape[1] > 64):
        return []
    cols = arr.reshape(n, -1)
    return [Candidate(rel, f"[:, {j}] (by row order)" if cols.shape[1] > 1 else "values (by row order)",
                      pd.Series(cols[:, j], index=view.test_ids)) for j in range(cols.shape[1])]


def candidates(view: Public, labels: set[str] | None, only: set[str] | None = None) -> Iterator[Candidate]:
    """Every candidate the agent's view offers (``only``: just these public files, paths relative to the
    environment folder; the id and media patterns come with public/test.csv)."""
    files = public_files(view)
    media = media_files(view)
    for path in files:
        rel = view.rel(path)
        if (only is not None and rel not in only) or path.relative_to(view.public).as_posix() in media:
            continue
        if rel == "public/test.csv":
            yield from _test_candidates(view)
            continue
        yield from file_candidates(path, view, labels)
    if only is None or "public/test.csv" in only:
        id_source = "public/test.csv" if view.id_column in view.test.columns else "public/sample_submission.csv"
        yield from id_candidates(view, id_source)
        yield from media_path_candidates(view)
    yield from sidecar_candidates(view, [p for p in files if only is None or view.rel(p) in only])


def _test_candidates(view: Public) -> Iterator[Candidate]:
    """test.csv's columns: the features train.csv also has are legit (judged against the train rows); a column only
    test.csv has is not."""
    test = view.test
    aligned = test.set_index(norm_keys(test[view.id_column]).to_numpy()).reindex(view.test_ids) \
        if view.id_column in test.columns else test.set_axis(view.test_ids)
    for c in test.columns:
        if c == view.id_column or c in view.media_columns:
            continue
        legit = c in view.train.columns
        yield Candidate("public/test.csv", str(c), aligned[c], legit=legit,
                        train_values=view.train[c].reset_index(drop=True) if legit else None)
