"""Loading a base model with a trainable LoRA adapter (PEFT), on CUDA when present (bf16 where supported) and on
the CPU otherwise. The base weights are frozen; the reference policy for KL is the same model with the adapter
disabled, so no second copy is ever loaded."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ..errors import TrainingError


def pick_device() -> str:
    try:
        from ..models.tiny import pick_device as _pick
    except ImportError:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return _pick()


def train_dtype(device: str):
    import torch

    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def resolve_model(spec: str, store=None) -> str:
    """'tiny' → the project's tiny model under ``<data dir>/models/tiny`` (built on first use, no download);
    an existing folder → itself; anything else is passed to ``from_pretrained`` as a hub id."""
    if spec == "tiny":
        from store.paths import data_dir

        root = (store.data_dir if store is not None else data_dir()) / "models" / "tiny"
        if not (root / "config.json").is_file():
            try:
                from ..models.tiny import build_tiny_model
            except ImportError as exc:
                raise TrainingError("the tiny model builder (engine.models.tiny) is not available") from exc
            build_tiny_model(root)
        return str(root)
    path = Path(spec).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise TrainingError(f"{spec}: not a model folder (no config.json)")
        return str(path.resolve())
    return spec


def lora_targets(model: Any, wanted: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                           "up_proj", "down_proj", "c_attn", "c_proj", "c_fc")) -> list[str]:
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    found = [w for w in wanted if w in names]
    if not found:
        raise TrainingError("found no linear layers to put LoRA adapters on")
    return found


def load_for_training(model_path: str, *, adapter: str | None = None, lora_r: int = 16, lora_alpha: int = 32,
                      lora_dropout: float = 0.0, modules_to_save: list[str] | None = None,
                      device: str | None = None) -> tuple[Any, Any, str]:
    """(peft model with a trainable adapter, tokenizer, device)."""
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = device or pick_device()
    try:
        tok = AutoTokenizer.from_pretrained(model_path)
        base = AutoModelForCausalLM.from_pretrained(model_path, dtype=train_dtype(device))
    except OSError as exc:
        raise TrainingError(f"cannot load model {model_path!r}: {exc}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if adapter:
        if not (Path(adapter) / "adapter_config.json").is_file():
            raise TrainingError(f"{adapter}: not a PEFT adapter folder (no adapter_config.json)")
        model = PeftModel.from_pretrained(base, adapter, is_trainable=True)
    else:
        cfg = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                         target_modules=lora_targets(base), modules_to_save=list(modules_to_save or []) or None,
                         task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
    model.to(device)
    torch.set_float32_matmul_precision("high")
    return model, tok, device


@contextlib.contextmanager
def adapter_disabled(model: Any):
    """The base model (reference policy for KL) = the same weights with the LoRA adapter switched off."""
    with model.disable_adapter():
        yield model


def trainable_state(model: Any) -> dict[str, Any]:
    from peft import get_peft_model_state_dict

    return {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}
