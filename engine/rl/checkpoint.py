"""Checkpoints: the adapter in PEFT's standard format (``adapter_config.json`` + ``adapter_model.safetensors``,
loadable with plain ``PeftModel.from_pretrained``) plus ``trainer_state.pt`` (optimizer, RNG states, curriculum,
step). Written to a temporary folder and renamed into place, then recorded with ``store.runs.add_checkpoint`` —
so a crash at any moment leaves either the previous checkpoint or the new one, never half of one. The files,
the folder and the rename are fsynced before the store records the checkpoint, so a power cut does not either.

Both files are hashed into the store, and a resume refuses a checkpoint whose files do not match. The state holds
tensors, numbers, strings, lists and dicts only (the NumPy RNG state as a list), and is read with
``torch.load(weights_only=True)``: a tampered ``trainer_state.pt`` can run no code when it is read (a checkpoint
written before the state was hashed, with its NumPy array, is read with that one NumPy type allowed)."""

from __future__ import annotations

import os
import pickle
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from store import Store, fsync_dir, fsync_folder, mkdir_synced, sha256_file
from store.runs import Checkpoint

from ..errors import TrainingError

STATE_FILE = "trainer_state.pt"
ADAPTER_FILE = "adapter_model.safetensors"


def rng_state() -> dict[str, Any]:
    kind, keys, pos, has_gauss, cached = np.random.get_state()  # legacy tuple form
    numpy_state = [kind, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)]
    state = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(_python_rng(state["python"]))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), int(pos), int(has_gauss), float(cached)))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(store: Store, run_id: str, run_dir: Path, step: int, model: Any, *, optimizer: Any = None,
                    extra: dict[str, Any] | None = None) -> Path:
    """Save and record the checkpoint of ``step`` (the number of completed steps)."""
    final = Path(run_dir) / "checkpoints" / f"step-{step:06d}"
    tmp = final.with_name(final.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    mkdir_synced(final.parent)
    tmp.mkdir()
    model.save_pretrained(str(tmp))
    payload = {"step": step, "rng": rng_state(), "extra": extra or {}}
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    torch.save(payload, tmp / STATE_FILE)
    fsync_folder(tmp)  # the files and their entries in the folder
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    fsync_dir(final.parent)  # the rename itself reaches the disk before the store says it happened
    store.runs.add_checkpoint(run_id, step, str(final), sha256_file(final / ADAPTER_FILE),
                              state={"state_file": STATE_FILE, "adapter_file": ADAPTER_FILE,
                                     "state_sha256": sha256_file(final / STATE_FILE)})
    return final


def _python_rng(state: Any) -> tuple:
    """``random.setstate`` wants tuples; a state read back may hold lists."""
    version, internal, gauss = state
    return (int(version), tuple(int(v) for v in internal), gauss)


def _legacy_numpy_types() -> list[Any]:
    """What ``np.random.get_state()`` pickled in checkpoints written before the state was a plain list."""
    reconstruct = getattr(getattr(np, "_core", np.core), "multiarray")._reconstruct
    return [reconstruct, np.ndarray, np.dtype, type(np.dtype(np.uint32))]


def load_state(path: str | Path) -> dict[str, Any]:
    """The trainer state, read without running code (``weights_only=True``); an unreadable or foreign file is a
    :class:`TrainingError`."""
    file = Path(path) / STATE_FILE
    try:
        with torch.serialization.safe_globals(_legacy_numpy_types()):
            state = torch.load(file, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise TrainingError(f"{file}: refused: not a trainer state this version can read safely ({first})") from None
    if not isinstance(state, dict) or "step" not in state or "rng" not in state:
        raise TrainingError(f"{file}: refused: not a trainer state (no step and RNG state)")
    return state


def load_adapter_weights(model: Any, path: str | Path) -> None:
    """Put the saved adapter weights into the live PEFT model (same shape, same names)."""
    from peft import set_peft_model_state_dict  # heavy optional dependency: loaded only when used
    from safetensors.torch import load_file  # heavy optional dependency: loaded only when used

    weights = load_file(str(Path(path) / ADAPTER_FILE))
    set_peft_model_state_dict(model, weights)


def verify(checkpoint: Checkpoint) -> bool:
    """The adapter file — and the trainer state, where its hash was recorded — still have the hashes recorded in
    the store."""
    f = Path(checkpoint["path"]) / ADAPTER_FILE
    if not (f.is_file() and sha256_file(f) == checkpoint["sha256"]):
        return False
    expected = (checkpoint.get("state") or {}).get("state_sha256")
    if expected is None:
        return True  # written before the state was hashed: load_state still reads it without running code
    state = Path(checkpoint["path"]) / STATE_FILE
    return state.is_file() and sha256_file(state) == expected
