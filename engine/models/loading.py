"""The one place models are loaded: the device rule, the dtype rule, and ``from_pretrained`` (a folder or hub id,
optionally with a PEFT adapter). Training code wraps what this returns; nothing else calls transformers' loaders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import SandmleError


def pick_device() -> str:
    """``"cuda"`` when a GPU is usable, else ``"cpu"``."""
    try:
        import torch  # heavy optional dependency: loaded only when a model is
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(device: str) -> Any:
    """bfloat16 on a CUDA device that supports it, else float32 (the CPU, older GPUs)."""
    import torch  # heavy optional dependency

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def quiet_transformers() -> None:
    """No download/progress bars from transformers (they would garble the TUI and the CLI's own progress)."""
    from transformers.utils import logging as hf_logging  # heavy optional dependency

    hf_logging.disable_progress_bar()


def from_pretrained(path_or_id: str | Path, *, adapter: str | Path | None = None, device: str | None = None,
                    trainable: bool = False) -> tuple[Any, Any]:
    """(model, tokenizer) from a folder or hub id on ``device`` (default: :func:`pick_device`) in its dtype
    (:func:`pick_dtype`), with an optional PEFT adapter (trainable when ``trainable``); eval mode unless
    ``trainable``. A tokenizer without a pad token pads with its end token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy optional dependency

    quiet_transformers()
    device = device or pick_device()
    path = str(path_or_id)
    if (path.startswith((".", "/", "~")) or Path(path).expanduser().exists()) and not Path(path).expanduser().is_dir():
        raise SandmleError(f"cannot load model {path!r}: no such folder")
    path = str(Path(path).expanduser()) if path.startswith("~") else path
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model: Any = AutoModelForCausalLM.from_pretrained(path, dtype=pick_dtype(device))
    except (OSError, ValueError) as exc:
        raise SandmleError(f"cannot load model {path!r}: {str(exc).splitlines()[0]}") from None
    if adapter:
        from peft import PeftModel  # heavy optional dependency

        if not (Path(adapter) / "adapter_config.json").is_file():
            raise SandmleError(f"cannot load adapter {str(adapter)!r}: not a PEFT adapter folder (no adapter_config.json)")
        try:
            model = PeftModel.from_pretrained(model, str(adapter), is_trainable=trainable)
        except (OSError, ValueError) as exc:
            raise SandmleError(f"cannot load adapter {str(adapter)!r}: {str(exc).splitlines()[0]}") from None
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device)
    if not trainable:
        model.eval()
    return model, tokenizer
