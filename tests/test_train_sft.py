"""SFT through TRL on stored scripted trajectories: loss only on assistant tokens, LoRA adapter in PEFT format."""

from __future__ import annotations

from pathlib import Path

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


def _episodes(store, spec: str, scaffold: str, turns: int) -> str:
    from engine.agents.policies import load_policy
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec

    register_tiny_env(store)
    run = store.runs.create("rollout", {"policy": spec, "scaffold": scaffold})
    run_episode(EnvSpec.from_dir(ENV_DIR), load_policy(spec), scaffold=scaffold, store=store, run_id=run, rng_seed=0,
                max_turns=turns)
    return run


def test_sft_selects_by_scaffold_and_by_a_policy_with_more_options(store, tiny_dir):
    from engine.rl.config import SFTConfig
    from engine.rl.sft import select_trajectories

    _episodes(store, "scripted:skill=0", "aide", 3)
    _episodes(store, "scripted:skill=0", "react", 6)
    _episodes(store, "scripted:strategy=linear", "react", 6)  # named scripted:skill=1,strategy=linear
    _episodes(store, "scripted:strategy=linear", "oneshot", 1)

    def picked(**kw) -> list[tuple[str, str]]:
        cfg = SFTConfig(model=str(tiny_dir), min_reward=0.0, **kw)
        return sorted((t.policy, t.scaffold) for t in select_trajectories(store, cfg))

    assert picked(source_policy="scripted:skill=1", scaffold="react") == [
        ("scripted:skill=1,strategy=linear", "react")]
    assert picked(source_policy="scripted:skill=0") == [("scripted:skill=0", "aide"), ("scripted:skill=0", "react")]
    assert len(picked(source_policy="scripted")) == 4 and len(picked(scaffold="oneshot")) == 1
    from engine.errors import TrainingError

    with pytest.raises(TrainingError, match="no stored trajectories"):  # a prefix must end where an option does
        picked(source_policy="scripted:skill=")
    with pytest.raises(ValueError, match="scaffold must be"):
        SFTConfig(model=str(tiny_dir), scaffold="tree")


def test_sft_trains_each_aide_reply_on_what_it_read(store, tiny_dir):
    """An aide reply reads the system prompt and its own step's prompt, not the episode's history: one example
    per step, each ending in that step's reply."""
    from transformers import AutoTokenizer

    from engine.rl.config import SFTConfig
    from engine.rl.sft import build_dataset

    run = _episodes(store, "scripted:skill=0", "aide", 3)
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    data = build_dataset(store, tok, SFTConfig(model=str(tiny_dir), source_run=run, min_reward=0.0,
                                               max_seq_len=100000))
    traj = store.trajectories.get(store.trajectories.list(run_id=run)[0].id)
    replies = [t.text for t in traj.turns if t.role == "assistant"]
    prompts = [traj.turns[i - 1].text for i, t in enumerate(traj.turns) if t.role == "assistant"]
    assert len(replies) == 3 and len(data) == 3
    for ex, reply, prompt in zip(data, replies, prompts):
        ids, mask = ex["input_ids"], ex["assistant_masks"]
        assert tok.decode([i for i, m in zip(ids, mask) if m]) == reply + "<|end|>"
        read = tok.decode([i for i, m in zip(ids, mask) if not m])
        assert read.startswith("<|system|>") and prompt in read
        assert sum(p in read for p in prompts) == 1  # only its own step's prompt


def test_full_finetuning_starts_from_a_model_not_an_adapter(tiny_dir):
    from engine.rl.config import SFTConfig

    with pytest.raises(ValueError, match="full_finetune trains the model itself"):
        SFTConfig(model=str(tiny_dir), adapter="sft-123", full_finetune=True)
    with pytest.raises(ValueError, match="needs full_finetune"):
        SFTConfig(model=str(tiny_dir), zero_unseen_tokens=True)


@pytest.mark.slow
def test_full_finetuning_makes_a_model_folder_that_keeps_tinys_recipe(store, tmp_path):
    """Every weight trained (the embeddings too): the run ends with a model folder — weights, tokenizer and the
    base's sandmle.json, so a folder made from tiny takes tiny's recipe — and names it in the errors that ask
    for an adapter."""
    import json

    import torch
    from transformers import AutoModelForCausalLM

    from engine.agents import tiny
    from engine.agents.tiny.recipe import TINY_SFT, defaults
    from engine.errors import SandmleError
    from engine.models.adapters import resolve_adapter
    from engine.rl.config import SFTConfig
    from engine.rl.sft import SFTRun

    base = build_tiny(tmp_path / "base", hidden=32, layers=1)
    meta = json.loads((base / "sandmle.json").read_text())
    (base / "sandmle.json").write_text(json.dumps({**meta, "recipe": tiny.VERSION}))  # as tiny.build writes it
    assert defaults("sft", str(base))["lr"] == TINY_SFT["lr"] and defaults("sft", str(tmp_path)) == {}
    run = scripted_demos(store, 2)
    sft = SFTRun(store, SFTConfig(model=str(base), source_run=run, min_reward=0.5, epochs=2, batch_size=1, lr=1e-3,
                                  full_finetune=True, zero_unseen_tokens=True, save_every=2))
    out = sft.train()
    assert "adapter" not in out and out["examples"] == 2 and out["steps"] == 4
    folder = tmp_path / "base"
    trained = AutoModelForCausalLM.from_pretrained(out["model"])
    before = AutoModelForCausalLM.from_pretrained(folder)
    emb = "model.embed_tokens.weight"
    assert not torch.allclose(trained.state_dict()[emb], before.state_dict()[emb])  # not only an adapter's weights
    # the tokens no demonstration contains have a zero embedding; the others are trained and nonzero
    from transformers import AutoTokenizer

    from engine.rl.sft import build_dataset

    tok = AutoTokenizer.from_pretrained(out["model"])
    seen = {i for ex in build_dataset(store, tok, sft.cfg)["input_ids"] for i in ex}
    norms = trained.get_input_embeddings().weight.norm(dim=1)
    assert 0 < len(seen) < len(norms)
    assert all(float(norms[i]) == 0.0 for i in range(len(norms)) if i not in seen)
    assert all(float(norms[i]) > 0.0 for i in seen)
    made = json.loads((Path(out["model"]) / "sandmle.json").read_text())
    assert made["trained_from"] == str(folder) and made["sft_run"] == sft.run_id and tiny.is_tiny(out["model"])
    assert [c["step"] for c in store.runs.checkpoints(sft.run_id)] == [2, 4]
    with pytest.raises(SandmleError, match="fine-tuned the whole model"):
        resolve_adapter(sft.run_id, store)


def test_the_seed_sets_the_new_adapters_initial_weights(store, tiny_dir):
    """Two SFT runs of one config in one process, torch's global RNG moved on in between: the same seed gives the
    same adapter (its LoRA weights start from the seed, not from whatever drew random numbers before); another seed
    another one."""
    import torch
    from safetensors.torch import load_file

    from engine.rl.config import SFTConfig
    from engine.rl.sft import SFTRun

    run = scripted_demos(store, 2)

    def adapter(seed: int) -> dict[str, torch.Tensor]:
        torch.rand(1000)  # what ran before (another run, a model build) moved the global RNG on
        cfg = SFTConfig(model=str(tiny_dir), source_run=run, min_reward=0.5, epochs=1, batch_size=1, lora_r=4,
                        seed=seed)
        out = SFTRun(store, cfg).train()
        return load_file(str(Path(out["adapter"]) / "adapter_model.safetensors"))

    first, again, other = adapter(0), adapter(0), adapter(1)
    lora = [k for k in first if "lora_A" in k]
    assert lora and sorted(first) == sorted(again)
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in lora)
