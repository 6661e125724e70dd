"""A base model with a trainable LoRA adapter (PEFT) for training, loaded through :mod:`engine.models.loading`
(its device and dtype rules). The base weights are frozen; the reference policy for KL is the same model with the
starting adapter's weights swapped in (:class:`~.distributed.TokenLogProbs`), so no second copy is ever loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from store import Store

from ..agents import tiny
from ..errors import TrainingError
from ..models.adapters import LORA_TARGETS
from ..models.loading import from_pretrained, pick_device


def resolve_model(spec: str, store: Store) -> str:
    """'tiny' → the project's tiny model under ``<data dir>/models/tiny`` (built on first use, no download);
    an existing folder → itself; anything else is passed to ``from_pretrained`` as a hub id."""
    if spec == tiny.NAME:
        return str(tiny.ensure(store.data_dir))
    path = Path(spec).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise TrainingError(f"{spec}: not a model folder (no config.json)")
        return str(path.resolve())
    return spec


def lora_targets(model: Any, wanted: tuple[str, ...] = LORA_TARGETS) -> list[str]:
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    found = [w for w in wanted if w in names]
    if not found:
        raise TrainingError("found no linear layers to put LoRA adapters on")
    return found


def load_for_training(model_path: str, *, adapter: str | None = None, lora_r: int = 16, lora_alpha: int = 32,
                      lora_dropout: float = 0.0, modules_to_save: list[str] | None = None,
                      device: str | None = None, gradient_checkpointing: bool = False,
                      full: bool = False) -> tuple[Any, Any, str]:
    """(peft model with a trainable adapter, tokenizer, device): ``adapter`` resumed when given, else a new LoRA;
    with ``full`` the plain model, every weight trainable (no adapter). ``gradient_checkpointing`` recomputes the
    backbone's activations in the backward pass of training (never during generation)."""
    import torch  # heavy optional dependency
    from peft import LoraConfig, get_peft_model  # heavy optional dependency

    device = device or pick_device()
    model, tok = from_pretrained(model_path, adapter=adapter, device=device, trainable=True)
    if full:
        if adapter:
            raise TrainingError("full fine-tuning trains the model itself: give a model, not an adapter")
        model.requires_grad_(True)
    elif not adapter:
        cfg = LoraConfig(r=lora_r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                         target_modules=lora_targets(model), modules_to_save=list(modules_to_save or []) or None,
                         task_type="CAUSAL_LM")
        model = get_peft_model(model, cfg)
    if gradient_checkpointing:
        (model if full else model.get_base_model()).gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.to(device)
    torch.set_float32_matmul_precision("high")
    return model, tok, device
