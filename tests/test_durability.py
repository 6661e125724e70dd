"""What a power cut cannot take back: a transaction the store committed (WAL with ``synchronous=FULL``), and a
checkpoint or adapter the store recorded (its files, its folder and the rename that put it in place are fsynced
before the row that points at it is written)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

SYNCHRONOUS_FULL = 2  # what `PRAGMA synchronous` reads for FULL (NORMAL reads 1)


def test_every_store_connection_commits_with_synchronous_full(tmp_path):
    """synchronous is a setting of the connection, not of the file: each open of the store sets it again."""
    from store import Store

    db = tmp_path / "sandmle.db"
    with Store(db) as first:
        first.runs.create("eval", {})
        assert first.conn.execute("PRAGMA synchronous").fetchone()[0] == SYNCHRONOUS_FULL
    with Store(db) as fresh:
        assert fresh.conn.execute("PRAGMA synchronous").fetchone()[0] == SYNCHRONOUS_FULL
        assert fresh.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with sqlite3.connect(db) as plain:  # the journal mode is the file's: WAL stays on for every reader
        assert plain.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


class _Fsyncs:
    """Every ``os.fsync`` made while it is installed: the (device, inode) of what was synced, and what ``probe``
    said at that moment."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, probe: Callable[[], Any] = lambda: None):
        self.calls: list[tuple[tuple[int, int], Any]] = []
        real = os.fsync

        def fsync(fd: int) -> None:
            st = os.fstat(fd)
            self.calls.append(((st.st_dev, st.st_ino), probe()))
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    def synced(self, path: Path, when: Callable[[Any], bool] = lambda _: True) -> bool:
        st = os.stat(path)
        return any(key == (st.st_dev, st.st_ino) and when(seen) for key, seen in self.calls)


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


class _Model:
    """What save_checkpoint needs of a PEFT model: ``save_pretrained`` writing the adapter's two files."""

    def save_pretrained(self, path: str) -> None:
        Path(path, "adapter_config.json").write_text("{}")
        Path(path, "adapter_model.safetensors").write_bytes(b"weights")


def test_a_grpo_checkpoint_is_on_the_disk_before_the_store_records_it(store, tmp_path, monkeypatch):
    from engine.rl.checkpoint import save_checkpoint

    rid = store.runs.create("grpo", {})
    run_dir = tmp_path / "runs" / rid
    final = run_dir / "checkpoints" / "step-000001"
    fsyncs = _Fsyncs(monkeypatch, lambda: (final.is_dir(), store.runs.latest_checkpoint(rid) is None))
    path = save_checkpoint(store, rid, run_dir, 1, _Model())
    assert path == final and store.runs.latest_checkpoint(rid)["path"] == str(final)
    unrecorded = lambda seen: seen[1]  # noqa: E731 - before the row was written
    assert [f.name for f in _files(final)] == ["adapter_config.json", "adapter_model.safetensors",
                                               "trainer_state.pt"]
    for f in _files(final):  # the rename keeps the inode: what was synced under .tmp is what is there now
        assert fsyncs.synced(f, unrecorded), f"{f.name} was not fsynced"
    assert fsyncs.synced(final, unrecorded), "the checkpoint folder's entries were not fsynced"
    assert fsyncs.synced(final.parent, lambda seen: seen[0] and seen[1]), \
        "the rename into checkpoints/ was not fsynced before the store recorded it"
    assert fsyncs.synced(run_dir, unrecorded), "the new checkpoints/ folder's entry in the run folder was not fsynced"


def test_an_sft_adapter_and_its_checkpoints_are_on_the_disk_before_the_store_records_them(store, monkeypatch):
    """SFT's folders are written in place by the trainer (no rename): each is fsynced, files and entries, before
    the checkpoint row or the run's summary names it."""
    from engine.rl.config import SFTConfig
    from engine.rl.sft import SFTRun

    run = SFTRun(store, SFTConfig(model="tiny"))
    checkpoint = run.run_dir / "checkpoints" / "checkpoint-2"
    fsyncs = _Fsyncs(monkeypatch, lambda: len(store.runs.checkpoints(run.run_id)))

    def write(folder: str) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        _Model().save_pretrained(folder)

    write(str(checkpoint))
    run._stop = SimpleNamespace(is_set=lambda: False)
    run._store_callback().on_save(SimpleNamespace(output_dir=str(checkpoint.parent)),
                                  SimpleNamespace(global_step=2), None)
    assert [c["step"] for c in store.runs.checkpoints(run.run_id)] == [2]
    for f in [*_files(checkpoint), checkpoint, checkpoint.parent]:
        assert fsyncs.synced(f, lambda recorded: recorded == 0), f"{f} was not fsynced before it was recorded"

    summary = run._save_final(SimpleNamespace(save_model=write), None, "tiny")
    adapter = Path(summary["adapter"])
    for f in [*_files(adapter), adapter, adapter.parent]:
        assert fsyncs.synced(f), f"{f} was not fsynced"
