"""Checkpoints: the adapter in PEFT's standard format (``adapter_config.json`` + ``adapter_model.safetensors``,
loadable with plain ``PeftModel.from_pretrained``) plus ``trainer_state.pt`` (optimizer, RNG states, curriculum,
step). Written to a temporary folder and renamed into place, then recorded with ``store.runs.add_checkpoint`` —
so a crash at any moment leaves either the previous checkpoint or the new one, never half of one."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from store import Store, sha256_file
from store.runs import Checkpoint

STATE_FILE = "trainer_state.pt"
ADAPTER_FILE = "adapter_model.safetensors"


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
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
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp))
    payload = {"step": step, "rng": rng_state(), "extra": extra or {}}
    if optimizer is not None:
        payload["optimizer"] = optimizer.state_dict()
    torch.save(payload, tmp / STATE_FILE)
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    store.runs.add_checkpoint(run_id, step, str(final), sha256_file(final / ADAPTER_FILE),
                              state={"state_file": STATE_FILE, "adapter_file": ADAPTER_FILE})
    return final


def load_state(path: str | Path) -> dict[str, Any]:
    return torch.load(Path(path) / STATE_FILE, map_location="cpu", weights_only=False)


def load_adapter_weights(model: Any, path: str | Path) -> None:
    """Put the saved adapter weights into the live PEFT model (same shape, same names)."""
    from peft import set_peft_model_state_dict  # heavy optional dependency: loaded only when used
    from safetensors.torch import load_file  # heavy optional dependency: loaded only when used

    weights = load_file(str(Path(path) / ADAPTER_FILE))
    set_peft_model_state_dict(model, weights)


def verify(checkpoint: Checkpoint) -> bool:
    """The adapter file still has the hash recorded in the store."""
    f = Path(checkpoint["path"]) / ADAPTER_FILE
    return f.is_file() and sha256_file(f) == checkpoint["sha256"]
