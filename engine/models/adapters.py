"""Naming adapters: a PEFT adapter folder, a training run's id (its final adapter), or ``RUN_ID@STEP`` (that run's
checkpoint of a step). Policy specs (``hf:MODEL,adapter=...``), ``--adapter`` and the names GRPO gives its
rollouts all use these forms, so where a sample came from can always be loaded again."""

from __future__ import annotations

from pathlib import Path

from store import Store

from ..errors import SandmleError

ADAPTER_CONFIG = "adapter_config.json"
#: the linear layers the project's LoRA adapters go on, of those a model has (Llama/Qwen names, then GPT-2's); a
#: vLLM server is told to put LoRA on these only (its default also wraps the LM head: more work per token, and vLLM
#: built for CPU then crashes on a prompt-log-prob request batched with another one)
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "c_attn", "c_proj", "c_fc")


def _is_adapter(path: Path) -> bool:
    return (path / ADAPTER_CONFIG).is_file()


def final_adapter(store: Store, run_id: str) -> str | None:
    """The adapter a sft/grpo run ended with (its summary), else its latest checkpoint; None when it has none."""
    row = store.runs.get(run_id)
    adapter = (row.get("summary") or {}).get("adapter")
    if isinstance(adapter, str) and _is_adapter(Path(adapter)):
        return adapter
    latest = store.runs.latest_checkpoint(row["id"])
    if latest and _is_adapter(Path(latest["path"])):
        return str(latest["path"])
    return None


def step_adapter(store: Store, run_id: str, step: int) -> str:
    """The checkpoint a run saved after ``step`` optimizer steps."""
    ckpts = store.runs.checkpoints(store.runs.get(run_id)["id"])
    for c in ckpts:
        if int(c["step"]) == step and _is_adapter(Path(c["path"])):
            return str(c["path"])
    saved = ", ".join(str(c["step"]) for c in ckpts) or "none"
    raise SandmleError(f"run {run_id} has no checkpoint of step {step} (saved steps: {saved})")


def resolve_adapter(ref: str, store: Store | None) -> str:
    """An adapter folder from a folder, a run id (or unique prefix) or ``RUN_ID@STEP`` of a run in ``store`` (the
    store the caller holds; without one only a folder can name an adapter)."""
    path = Path(ref).expanduser()
    if path.is_dir():
        if not _is_adapter(path):
            raise SandmleError(f"{ref}: not a PEFT adapter folder (no {ADAPTER_CONFIG})")
        return str(path)
    if path.is_absolute() or ref.startswith((".", "~")):
        raise SandmleError(f"adapter {ref!r}: no such folder")
    if store is None:
        raise SandmleError(f"adapter {ref!r}: no such folder, and no store to find a run of that id in")
    run_ref, _, step = ref.partition("@")
    row = store.runs.find(run_ref)
    if row is None:
        raise SandmleError(f"adapter {ref!r}: neither a folder nor a run id", hint="see `sandmle runs list`")
    if step:
        if not step.isdigit():
            raise SandmleError(f"adapter {ref!r}: expected RUN_ID@STEP with a whole step number")
        return step_adapter(store, row["id"], int(step))
    found = final_adapter(store, row["id"])
    model = (row.get("summary") or {}).get("model")
    if found is None and model:
        raise SandmleError(f"run {row['id']} fine-tuned the whole model (no adapter): use it as the model",
                           hint=f"--model {model}  (or hf:{model} as a policy)")
    if found is None:
        raise SandmleError(f"run {row['id']} ({row['kind']}, {row['status']}) has no adapter yet")
    return found
