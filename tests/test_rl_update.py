"""A GRPO step on a tiny real model (transformers + PEFT): LoRA moves, the base does not, observations are
masked, and the saved adapter reloads with plain PEFT."""

from __future__ import annotations

import math

import pytest
import torch

from engine.rl.distributed import TokenLogProbs
from engine.rl.modeling import load_for_training
from engine.rl.objective import build_sequence
from engine.rl.update import grpo_update, make_optimizer
from rl_tiny import build_tiny
from store.trajectories import Turn


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _turns(tok, answer: str, obs: str = "Observation: accuracy 0.81\n"):
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    return [Turn("system", "", token_ids=enc("system: solve the task\n")),
            Turn("user", "", token_ids=enc("train.csv test.csv\n")),
            Turn("assistant", "", token_ids=enc(answer)),
            Turn("tool", "", token_ids=enc(obs)),
            Turn("assistant", "", token_ids=enc("submission.to_csv('submission.csv')\n"))]


def _split(model):
    lora, base = {}, {}
    for n, p in model.named_parameters():
        (lora if "lora_" in n else base)[n] = p.detach().clone()
    return lora, base


def test_grpo_step_moves_lora_only_and_prefers_the_better_trajectory(tiny_dir, tmp_path):
    torch.manual_seed(0)
    model, tok, dev = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    good = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    bad = build_sequence(_turns(tok, "test = pd.read_csv('train.csv')\n"))
    lora0, base0 = _split(model)

    def seq_lp(seq):
        ids = torch.tensor([seq.input_ids])
        with torch.no_grad():
            lp = model(input_ids=ids).logits[:, :-1].log_softmax(-1).gather(2, ids[:, 1:, None]).squeeze(-1)
        p = len(seq.prompt_ids)
        m = torch.tensor([0] * p + seq.env_mask, dtype=torch.float32)[1:]
        return float((lp[0] * m).sum())

    before = seq_lp(good) - seq_lp(bad)
    opt = make_optimizer(model, lr=5e-3)
    for _ in range(5):
        st = grpo_update(TokenLogProbs(model), opt, [good, bad], [1.0, -1.0], [1.0, 1.0], micro_batch=1)
    assert st.trained_trajectories == 2 and st.trained_tokens == good.model_tokens + bad.model_tokens
    lora1, base1 = _split(model)
    assert lora0 and base0
    assert any(not torch.equal(lora0[n], lora1[n]) for n in lora0), "LoRA weights did not change"
    assert all(torch.equal(base0[n], base1[n]) for n in base0), "a base weight changed"
    after = seq_lp(good) - seq_lp(bad)
    assert after > before, (before, after)

    # the adapter saves in PEFT's format and reloads with plain PEFT to the same outputs
    model.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    fresh = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), tmp_path / "adapter")
    ids = torch.tensor([good.input_ids])
    model.eval()
    fresh.eval()
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, fresh(input_ids=ids).logits, atol=1e-5)


def test_observation_tokens_get_no_gradient_through_the_model(tiny_dir):
    """Changing an observation's tokens changes the context but its own positions carry zero loss weight:
    a batch whose only model tokens have advantage 0 yields exactly zero gradient."""
    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    opt = make_optimizer(model, lr=1e-2)
    lora0, _ = _split(model)
    st = grpo_update(TokenLogProbs(model), opt, [seq], [0.0], [1.0])
    lora1, _ = _split(model)
    assert st.trained_tokens == seq.model_tokens
    assert all(torch.equal(lora0[n], lora1[n]) for n in lora0)
    assert st.grad_norm == 0.0


def test_skipped_trajectories_never_reach_the_model(tiny_dir):
    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    opt = make_optimizer(model, lr=1e-2)
    lora0, _ = _split(model)
    st = grpo_update(TokenLogProbs(model), opt, [seq, seq], [1.0, -1.0], [0.0, 0.0])
    assert st.trained_trajectories == 0
    assert all(torch.equal(lora0[n], p) for n, p in _split(model)[0].items())


def test_kl_to_the_starting_policy_is_zero_at_start_and_grows_as_the_adapter_moves(tiny_dir):
    """The reference is the policy the scorer started from (a fresh LoRA: B = 0, so the base model itself), kept as
    a copy of the adapter's weights and swapped in for the reference pass; the trained weights come back intact."""
    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    opt = make_optimizer(model, lr=5e-2)
    scorer = TokenLogProbs(model)
    st0 = grpo_update(scorer, opt, [seq], [1.0], [1.0], kl_coef=0.1)
    assert st0.kl == pytest.approx(0.0, abs=1e-6)   # LoRA B = 0 at start: policy == base
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    ids = torch.tensor([seq.input_ids])
    with torch.no_grad():
        ref = scorer.reference(ids, torch.ones_like(ids))
        with model.disable_adapter():
            base = scorer(ids, torch.ones_like(ids))
    assert torch.allclose(ref, base, atol=1e-6)
    assert all(torch.equal(p, trained[n]) for n, p in model.named_parameters() if p.requires_grad)
    st1 = grpo_update(scorer, opt, [seq], [1.0], [1.0], kl_coef=0.1)
    assert st1.kl > 0 and math.isfinite(st1.loss)


def test_kl_is_measured_without_entering_the_loss(tiny_dir):
    """kl_coef = 0: the KL is still reported (the collapse watch reads it), and the loss is the bare surrogate."""
    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    seqs = [build_sequence(_turns(tok, code)) for code in ("model = LogisticRegression()\n", "x = 1\n")]
    opt = make_optimizer(model, lr=5e-2)
    scorer = TokenLogProbs(model)
    grpo_update(scorer, opt, seqs, [1.0, -1.0], [1.0, 1.0], micro_batch=1)
    st = grpo_update(scorer, opt, seqs, [1.0, -1.0], [1.0, 1.0], micro_batch=1)
    assert st.kl > 0
    assert st.loss == pytest.approx(st.pg_loss)


def test_checkpoint_round_trip_with_a_trained_norm(tiny_dir, tmp_path, store):
    """LoRA + a fully trained final norm (modules_to_save): saved in PEFT format, restored by resume."""
    from engine.rl.checkpoint import load_adapter_weights, load_state, save_checkpoint, verify

    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, modules_to_save=["norm"], device="cpu")
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    opt = make_optimizer(model, lr=5e-2)
    for _ in range(2):
        grpo_update(TokenLogProbs(model), opt, [seq], [1.0], [1.0])
    trained = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    assert any("modules_to_save" in n for n in trained)
    rid = store.runs.create("grpo", {})
    path = save_checkpoint(store, rid, tmp_path / "run", 2, model, optimizer=opt, extra={"curriculum": {"x": 1}})
    ck = store.runs.latest_checkpoint(rid)
    assert ck["step"] == 2 and verify(ck) and (path / "adapter_config.json").is_file()
    fresh, _, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, modules_to_save=["norm"], device="cpu")
    load_adapter_weights(fresh, ck["path"])
    for n, p in fresh.named_parameters():
        if n in trained:
            assert torch.equal(p, trained[n]), n
    state = load_state(ck["path"])
    assert state["step"] == 2 and state["extra"]["curriculum"] == {"x": 1} and "optimizer" in state


class _Payload:
    """What a tampered trainer_state.pt could carry: unpickling it runs a command."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


def test_a_tampered_trainer_state_is_refused_and_runs_no_code(tiny_dir, tmp_path, store):
    """trainer_state.pt is hashed with the adapter (a changed file: the checkpoint does not verify) and read with
    weights_only=True (even unhashed, a pickle that would run code is refused and runs nothing). The RNG states
    come back exactly."""
    import random

    import numpy as np

    from engine.errors import TrainingError
    from engine.rl.checkpoint import STATE_FILE, load_state, save_checkpoint, set_rng_state, verify

    model, _, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    rid = store.runs.create("grpo", {})
    random.seed(5)
    np.random.seed(6)
    torch.manual_seed(7)
    path = save_checkpoint(store, rid, tmp_path / "run", 1, model, optimizer=make_optimizer(model, lr=1e-3),
                           extra={"sampler_rng": random.Random(3).getstate()})
    ck = store.runs.latest_checkpoint(rid)
    assert verify(ck) and len(ck["state"]["state_sha256"]) == 64
    expected = (random.random(), float(np.random.random()), float(torch.rand(1)))
    random.seed(0), np.random.seed(0), torch.manual_seed(0)
    set_rng_state(load_state(path)["rng"])
    assert (random.random(), float(np.random.random()), float(torch.rand(1))) == expected
    marker = tmp_path / "code-ran"
    good = (path / STATE_FILE).read_bytes()
    torch.save({"step": 1, "rng": _Payload(marker)}, path / STATE_FILE)
    assert not verify(ck)  # the store's hash no longer matches
    with pytest.raises(TrainingError, match="refused: not a trainer state this version can read safely"):
        load_state(path)
    assert not marker.exists()
    (path / STATE_FILE).write_bytes(good[:-3] + b"xyz")
    assert not verify(ck)
    (path / STATE_FILE).write_bytes(good)
    assert verify(ck)


def test_chunked_logprobs_equal_the_full_log_softmax_and_keep_no_vocabulary_sized_tensor(tiny_dir):
    from engine.rl.objective import sequence_logprobs

    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    ids = torch.tensor([seq.input_ids] * 2)
    att = torch.ones_like(ids)
    params = [p for p in model.parameters() if p.requires_grad]
    weights = {p.data_ptr() for p in model.parameters()}

    def run(fn):
        saved: list[int] = []

        def pack(t):
            if t.data_ptr() not in weights:
                saved.append(t.numel())
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            lp = fn()
        grads = torch.autograd.grad(lp.sum(), params)
        return lp.detach(), grads, max(saved)

    def naive():
        logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float() / 0.7
        return logits.log_softmax(-1).gather(2, ids[:, 1:, None]).squeeze(-1)

    chunk = 16
    B, T, V = ids.shape[0], ids.shape[1], model.config.vocab_size
    assert T - 1 > 2 * chunk
    ref, ref_grads, ref_saved = run(naive)
    lp, grads, most = run(lambda: sequence_logprobs(model, ids, att, temperature=0.7, chunk=chunk))
    assert lp.shape == (B, T - 1) and torch.allclose(lp, ref, atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(grads, ref_grads))
    assert ref_saved >= B * (T - 1) * V  # the naive path keeps the whole [B, T-1, V] log-softmax for backward
    assert most < B * chunk * V  # the chunked path keeps not even one chunk's logits


def test_gradient_checkpointing_gives_the_same_gradients(tiny_dir):
    from engine.rl.objective import sequence_logprobs

    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu",
                                      gradient_checkpointing=True)
    assert model.get_base_model().is_gradient_checkpointing
    seq = build_sequence(_turns(tok, "model = LogisticRegression()\n"))
    ids = torch.tensor([seq.input_ids])
    params = [p for p in model.parameters() if p.requires_grad]
    model.train()
    with_ckpt = torch.autograd.grad(sequence_logprobs(model, ids, torch.ones_like(ids)).sum(), params)
    model.get_base_model().gradient_checkpointing_disable()
    without = torch.autograd.grad(sequence_logprobs(model, ids, torch.ones_like(ids)).sum(), params)
    assert any(g.abs().sum() > 0 for g in without)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(with_ckpt, without))


@pytest.mark.parametrize("gap,capped", [(0.3, 0.0), (1.0, 1.0)])
def test_the_update_measures_the_sampler_mismatch_and_caps_the_importance_weights(tiny_dir, gap, capped):
    """Sampler log-probs that sit ``gap`` below the trainer's on every token: mean |Δ log p| = gap, the k3 KL
    estimate exp(gap) − 1 − gap, and weights exp(gap) capped at 2."""
    from engine.rl.objective import sequence_logprobs

    model, tok, _ = load_for_training(str(tiny_dir), lora_r=4, lora_alpha=8, device="cpu")
    turns = _turns(tok, "model = LogisticRegression()\n")
    seq = build_sequence(turns)
    ids = torch.tensor([seq.input_ids])
    with torch.no_grad():
        lp = sequence_logprobs(model, ids, torch.ones_like(ids))[0].tolist()
    pos = len(seq.prompt_ids) - 1
    for t in turns:  # give each assistant turn the sampler's log-probs: the trainer's minus gap
        n = len(t.token_ids)
        if t.role == "assistant":
            t.logprobs = [x - gap for x in lp[pos:pos + n]]
        if t.role not in ("system", "user"):
            pos += n
    st = grpo_update(TokenLogProbs(model), make_optimizer(model, lr=1e-3), [build_sequence(turns)], [1.0], [1.0], tis_cap=2.0)
    assert st.sampler_tokens == seq.model_tokens
    assert st.sampler_logp_diff == pytest.approx(gap, abs=1e-4)
    assert st.sampler_kl == pytest.approx(math.exp(gap) - 1 - gap, abs=1e-4)
    assert st.tis_capped == capped
