"""Naming adapters: a folder, a run id (final adapter), RUN_ID@STEP (a checkpoint); clear errors otherwise."""

from __future__ import annotations

import pytest

from engine.errors import SandmleError
from engine.models.adapters import resolve_adapter


@pytest.fixture(scope="module")
def adapter_dir(tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from rl_tiny import build_tiny

    root = tmp_path_factory.mktemp("adapters")
    base = AutoModelForCausalLM.from_pretrained(build_tiny(root / "base", hidden=32, layers=1))
    model = get_peft_model(base, LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    out = root / "adapter"
    model.save_pretrained(out)
    return out


def test_a_folder_names_itself(adapter_dir, store, tmp_path):
    assert resolve_adapter(str(adapter_dir), store) == str(adapter_dir)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SandmleError, match="not a PEFT adapter folder"):
        resolve_adapter(str(tmp_path / "empty"), store)
    with pytest.raises(SandmleError, match="no such folder"):
        resolve_adapter(str(tmp_path / "missing"), store)


def test_a_run_id_names_its_final_adapter_and_run_at_step_a_checkpoint(adapter_dir, store, tmp_path):
    import shutil

    sft = store.runs.create("sft", {}, run_id="sft-0123456789")
    store.runs.finish(sft, "done", summary={"adapter": str(adapter_dir)})
    assert resolve_adapter("sft-0123456789", store) == str(adapter_dir)
    assert resolve_adapter("sft-0123", store) == str(adapter_dir)  # a unique prefix

    grpo = store.runs.create("grpo", {}, run_id="grpo-aaaa000000")  # still running: no summary yet
    steps = {}
    for step in (2, 4):
        steps[step] = tmp_path / f"step-{step}"
        shutil.copytree(adapter_dir, steps[step])
        store.runs.add_checkpoint(grpo, step, str(steps[step]), "sha")
    assert resolve_adapter(grpo, store) == str(steps[4])
    assert resolve_adapter(f"{grpo}@2", store) == str(steps[2])
    with pytest.raises(SandmleError, match=r"no checkpoint of step 3 \(saved steps: 2, 4\)"):
        resolve_adapter(f"{grpo}@3", store)
    with pytest.raises(SandmleError, match="whole step number"):
        resolve_adapter(f"{grpo}@last", store)


def test_unknown_names_and_runs_without_adapters_fail_clearly(store):
    with pytest.raises(SandmleError, match="neither a folder nor a run id"):
        resolve_adapter("nope-123", store)
    run = store.runs.create("grpo", {}, run_id="grpo-bbbb000000")
    with pytest.raises(SandmleError, match="grpo-bbbb000000 \\(grpo, running\\) has no adapter yet"):
        resolve_adapter(run, store)


def test_a_run_id_is_found_only_in_the_store_the_caller_holds(adapter_dir, store, tmp_path, monkeypatch):
    """No second door into the store: without a store a run id is refused in one line, and the data dir of the
    settings is never opened for it."""
    elsewhere = tmp_path / "settings-home"
    monkeypatch.setenv("SANDMLE_HOME", str(elsewhere))
    run = store.runs.create("sft", {}, run_id="sft-cccc000000")
    store.runs.finish(run, "done", summary={"adapter": str(adapter_dir)})
    assert resolve_adapter(run, store) == str(adapter_dir)
    with pytest.raises(SandmleError, match="no such folder, and no store to find a run of that id in"):
        resolve_adapter(run, None)
    assert resolve_adapter(str(adapter_dir), None) == str(adapter_dir)  # a folder needs no store
    assert not elsewhere.exists()
