"""What an environment's public/ may hold (the declared file policy: the grading spec's ``public_files`` or the
standard files and the media its rows point to) and the public files' hashes (what changed since an audit)."""

from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path, PurePosixPath

import pandas as pd

from ...envs.layout import GradeSpec
from .view import media_columns

#: the files every environment's public/ holds
STANDARD_FILES = ("description.md", "train.csv", "test.csv", "sample_submission.csv")


def declared_files(env_dir: str | Path, spec: GradeSpec | None = None) -> list[str]:
    """The public files an environment may hold, as patterns relative to ``public/``: the grading spec's
    ``public_files`` when it declares them, else the standard files and the folders of the media its rows point
    to (``test/*.png``)."""
    if spec is not None and spec.public_files is not None:
        return list(spec.public_files)
    public = Path(env_dir) / "public"
    patterns = list(STANDARD_FILES)
    for name in ("train.csv", "test.csv"):
        if not (public / name).is_file():
            continue
        frame = pd.read_csv(public / name, nrows=200)
        for c in media_columns(frame, public):
            for p in sorted({PurePosixPath(v) for v in frame[c].dropna().astype(str)}):
                pattern = f"{p.parent.as_posix()}/*{p.suffix}" if p.parent.as_posix() != "." else f"*{p.suffix}"
                if pattern not in patterns:
                    patterns.append(pattern)
    return patterns


def declare_all(public: str | Path) -> list[str]:
    """Patterns declaring every file now in ``public`` (an imported competition declares what it ships): top-level
    files by name, folders as ``folder/**``."""
    public = Path(public)
    return sorted(p.name if p.is_file() else f"{p.name}/**" for p in public.iterdir() if not p.name.startswith("."))


def undeclared(env_dir: Path, patterns: list[str]) -> list[str]:
    public = env_dir / "public"
    out = []
    for p in sorted(public.rglob("*")):
        rel = p.relative_to(public).as_posix()
        if p.is_file() and not any(fnmatch.fnmatchcase(rel, pat) for pat in patterns):
            out.append(f"public/{rel}")
    return out


def changed_files(env_dir: str | Path, before: dict[str, str]) -> set[str]:
    """Public files (relative to the environment folder) added or changed since ``before`` (:func:`file_hashes`)."""
    now = file_hashes(env_dir)
    return {rel for rel, h in now.items() if before.get(rel) != h}


#: files hashed by content (smaller, not media); the rest by size and modification time
HASH_BYTES = 2**20
MEDIA_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".wav", ".aif", ".aiff", ".mp3", ".flac",
                  ".npy", ".npz")


def file_hashes(env_dir: str | Path) -> dict[str, str]:
    """Every public file (relative to the environment folder) → its content hash, or its size and modification
    time for media and large files (cheap on a real competition of 100,000 images)."""
    env_dir = Path(env_dir)
    out = {}
    for p in sorted((env_dir / "public").rglob("*")):
        if not p.is_file():
            continue
        st = p.stat()
        rel = p.relative_to(env_dir).as_posix()
        if st.st_size <= HASH_BYTES and p.suffix.lower() not in MEDIA_SUFFIXES:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = f"{st.st_size}:{st.st_mtime_ns}"
    return out
