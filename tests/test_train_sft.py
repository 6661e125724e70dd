"""SFT through TRL on stored scripted trajectories: loss only on assistant tokens, LoRA adapter in PEFT format."""

from __future__ import annotations

import pytest

from rl_tiny import ENV_DIR, build_tiny, register_tiny_env, scripted_demos


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def test_sft_examples_train_only_on_assistant_tokens(store, tiny_dir):
    from transformers import AutoTokenizer

    from engine.rl.config import SFTConfig
    from engine.rl.sft import build_dataset

    run = scripted_demos(store, 1)
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    data = build_dataset(store, tok, SFTConfig(model=str(tiny_dir), source_run=run, min_reward=0.5,
                                               max_seq_len=100000))
    assert len(data) == 1
    ids, mask = data[0]["input_ids"], data[0]["assistant_masks"]
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    trained = tok.decode([i for i, m in zip(ids, mask) if m])
    traj = store.trajectories.get(store.trajectories.list(run_id=run)[0].id)
    assistant = [t.text for t in traj.turns if t.role == "assistant"]
    other = [t.text for t in traj.turns if t.role != "assistant"]
    # every assistant reply is trained on, followed by its end marker; no observation or prompt text is
    assert trained == "".join(a + "<|end|>" for a in assistant)
    assert all(o.strip()[:40] not in trained for o in other if o.strip())


def test_sft_filters_by_reward(store, tiny_dir):
    from engine.errors import TrainingError
    from engine.rl.config import SFTConfig
    from engine.rl.sft import select_trajectories

    run = scripted_demos(store, 1)
    with pytest.raises(TrainingError, match="reward >= 1.5"):
        select_trajectories(store, SFTConfig(model=str(tiny_dir), source_run=run, min_reward=1.5))


@pytest.mark.slow
def test_sft_run_saves_a_peft_adapter_and_logs_to_the_store(store, tiny_dir, run_cli):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    run = scripted_demos(store, 2)
    res = run_cli("train", "sft", "--model", str(tiny_dir), "--source-run", run, "--min-reward", "0.5",
                  "--epochs", "2", "--batch-size", "1", "--save-every", "2", "--lora-r", "4", "--json")
    assert res.code == 0, res.err
    out = res.json()
    row = store.runs.get(out["run_id"])
    assert row["status"] == "done" and row["kind"] == "sft"
    assert out["examples"] == 2 and out["steps"] == 4
    losses = store.runs.metrics(out["run_id"], ["loss"])["loss"]
    assert len(losses) == 4 and all(v > 0 for _, v in losses)
    assert [c["step"] for c in store.runs.checkpoints(out["run_id"])] == [2, 4]
    # plain PEFT reloads the adapter, and it changed the model
    base = AutoModelForCausalLM.from_pretrained(tiny_dir)
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.no_grad():
        before = base(input_ids=ids).logits.clone()
        tuned = PeftModel.from_pretrained(base, out["adapter"])
        after = tuned(input_ids=ids).logits
    assert not torch.allclose(before, after)
