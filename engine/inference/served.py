"""What a vLLM engine can serve of a trainer's PEFT model: LoRA weights load as adapters; modules trained in full
(PEFT ``modules_to_save`` — e.g. the norms tiny's SFT recipe trains) do not (vLLM refuses such adapters). So those
modules are merged into a copy of the base model that the engine loads instead (:func:`merged_base`), and the
adapter published after each update carries only its LoRA weights (:func:`save_lora`). The merged modules must
then stay as they are while the engine serves: the trainer freezes them (:func:`freeze_saved_modules`) and
:meth:`engine.inference.vllm_server.VLLMServerSampler.publish` refuses a model that still trains one."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..models.adapters import LORA_TARGETS

#: files of a model folder that hold weights (everything else — config, tokenizer — is copied as it is)
_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".index.json")
MARKER = "sandmle-merged.json"


def saved_modules(model: Any) -> dict[str, Any]:
    """The base model's state-dict key → the active adapter's trained copy, for every module the PEFT ``model``
    trains in full (none for a LoRA-only adapter or a plain model)."""
    from peft.utils import ModulesToSaveWrapper  # heavy optional dependency

    out: dict[str, Any] = {}
    prefix = "base_model.model."
    for name, module in model.named_modules():
        if not isinstance(module, ModulesToSaveWrapper):
            continue
        copy = module.modules_to_save[str(module.active_adapter)]
        key = name[len(prefix):] if name.startswith(prefix) else name
        for pname, tensor in copy.state_dict().items():
            out[f"{key}.{pname}"] = tensor.detach().to("cpu")
    return out


def lora_layers(model: Any) -> list[str]:
    """The layer names the PEFT ``model``'s active adapter puts LoRA on (the project's :data:`LORA_TARGETS` for a
    plain model): what a vLLM server is told to wrap."""
    config = getattr(model, "peft_config", {}).get(getattr(model, "active_adapter", "default"))
    targets = getattr(config, "target_modules", None)
    if isinstance(targets, str) or not targets:  # a regex, or none: the project's own list
        return list(LORA_TARGETS)
    return sorted(str(t) for t in targets)


def trained_saved_modules(model: Any) -> list[str]:
    """The modules trained in full that are still trainable (an engine cannot follow their updates)."""
    return sorted({n.split(".modules_to_save.")[0].removeprefix("base_model.model.")
                   for n, p in model.named_parameters() if ".modules_to_save." in n and p.requires_grad})


def freeze_saved_modules(model: Any) -> list[str]:
    """Stop training the modules trained in full (they are served merged into the base); returns their names."""
    names = trained_saved_modules(model)
    for n, p in model.named_parameters():
        if ".modules_to_save." in n:
            p.requires_grad_(False)
    return names


def _digest(base: str, modules: dict[str, Any]) -> str:
    h = hashlib.sha256(base.encode())
    for key in sorted(modules):
        h.update(key.encode())
        h.update(modules[key].float().numpy().tobytes())
    return h.hexdigest()[:16]


def merged_base(model: Any, base: str, out_dir: str | Path) -> str:
    """The model folder an engine should load for ``model``: ``base`` itself when it trains no module in full,
    else ``out_dir``, a copy of ``base`` with those modules' weights (written once; rewritten when they differ)."""
    modules = saved_modules(model)
    if not modules:
        return base
    out = Path(out_dir)
    digest = _digest(base, modules)
    marker = out / MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("digest") == digest:
        return str(out)
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy optional dependency

    full = AutoModelForCausalLM.from_pretrained(base, dtype="auto")
    state = full.state_dict()
    missing = sorted(k for k in modules if k not in state)
    if missing:
        raise ValueError(f"the base model {base} has no {', '.join(missing[:3])}: the adapter is not for it")
    full.load_state_dict({k: v.to(state[k].dtype) for k, v in modules.items()}, strict=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    src = Path(base)
    if src.is_dir():  # config, tokenizer and the project's own files as they are
        for f in src.iterdir():
            if f.is_file() and not f.name.endswith(_WEIGHTS):
                shutil.copy2(f, tmp / f.name)
    else:
        AutoTokenizer.from_pretrained(base).save_pretrained(tmp)
    full.save_pretrained(tmp)
    (tmp / MARKER).write_text(json.dumps({"base": base, "digest": digest, "merged": sorted(modules)}, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return str(out)


def save_lora(model: Any, path: str | Path) -> None:
    """``model``'s adapter in PEFT's format with its LoRA weights only (no ``modules_to_save``: those are in the
    merged base)."""
    from safetensors.torch import load_file, save_file  # heavy optional dependency

    path = Path(path)
    model.save_pretrained(str(path))
    config_file = path / "adapter_config.json"
    config = json.loads(config_file.read_text())
    if not config.get("modules_to_save"):
        return
    config["modules_to_save"] = None
    config_file.write_text(json.dumps(config, indent=2))
    weights = path / "adapter_model.safetensors"
    state = load_file(str(weights))
    save_file({k: v for k, v in state.items() if ".lora_" in k}, str(weights), metadata={"format": "pt"})
