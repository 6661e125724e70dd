"""The vLLM sampler against a real ``vllm serve`` — vLLM built for CPU, set up by ``make vllm`` in ``.venv-vllm``
(``make test`` runs it first); where it is missing every test here skips, saying why.

Two servers in all, to keep the module to a few minutes on 2 cores (each starts in 20-110 s and holds ~3 GB):
the first test runs ``sandmle train grpo --model tiny --sampler vllm`` as users do, which starts and stops a server
of its own; every later test shares one server of the module, started by the project's own launcher on the ``tiny``
model in float32 (the trainer's dtype), and stopped — its whole process group — at the end."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from conftest import ROOT
from engine.agents import tiny
from engine.config import VLLMSettings
from engine.inference import SampleRequest, SamplerError, StaleSampleError, check_fresh
from engine.inference import vllm_server
from engine.inference.served import freeze_saved_modules, merged_base
from engine.inference.vllm_server import COMMAND_ENV, VLLMServerSampler, find_vllm, launch_server, stop_process
from rl_tiny import register_tiny_env

pytestmark = pytest.mark.slow
SANDMLE = Path(sys.executable).with_name("sandmle")


@pytest.fixture(scope="module")
def real_vllm():
    """The vLLM command the project finds with no variable set (skips, saying why, where there is none)."""
    saved = os.environ.pop(COMMAND_ENV, None)
    try:
        found = find_vllm(None)
    finally:
        if saved is not None:
            os.environ[COMMAND_ENV] = saved
    if found is None:
        pytest.skip(vllm_server.missing_vllm())
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


class Served:
    def __init__(self, url: str, model: Path, proc: subprocess.Popen, log: Path):
        self.url, self.model, self.proc, self.log = url, model, proc, log


@pytest.fixture(scope="module")
def served(real_vllm, tmp_path_factory, monkeypatch_module):
    """One real server for the module: the ``tiny`` model of a shared data dir, started by ``launch_server`` in
    float32; its process group is gone afterwards."""
    monkeypatch_module.delenv(COMMAND_ENV, raising=False)
    home = tmp_path_factory.mktemp("vllm-home")
    model = tiny.ensure(home)
    log = home / "vllm.log"
    url, proc = launch_server(str(model), lora_rank=16, log_path=log, dtype="float32", settings=VLLMSettings())
    yield Served(url, model, proc, log)
    stop_process(proc)
    assert proc.poll() is not None and not _group_alive(proc.pid)


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _sandmle(home: Path, *args: str) -> subprocess.Popen:
    """The installed console script, as users start it (its own process group, so a kill reaches only it)."""
    env = {k: v for k, v in os.environ.items() if k != COMMAND_ENV}
    env.update(SANDMLE_HOME=str(home), TRL_EXPERIMENTAL_SILENCE="1")
    cmd = [str(SANDMLE)] if SANDMLE.is_file() else [sys.executable, "-m", "workbench"]
    return subprocess.Popen([*cmd, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _lora(model_dir: Path, *, seed: int = 0, scale: float = 0.5, **extra):
    """tiny with a LoRA adapter of tiny's recipe whose weights really change the outputs (B is random)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
                           LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "v_proj", "up_proj"], **extra))
    _nudge(model, scale)
    return model.eval()


def _nudge(model, scale: float, part: str = "lora_") -> None:
    with torch.no_grad():
        for name, p in model.named_parameters():
            if part in name:
                p.add_(scale * torch.randn_like(p))


def _requests(model_dir: Path, n: int = 4, max_new: int = 24) -> list[SampleRequest]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    texts = ["fit a model", "import numpy as np", "x", "write submission.csv"]
    prompts = [tok(f"<|user|>\n{texts[i % 4]}<|end|><|assistant|>\n", add_special_tokens=False)["input_ids"]
               for i in range(n)]
    return [SampleRequest(tuple(p), max_new, temperature=1.0, seed=i, stop_ids=(tok.eos_token_id,))
            for i, p in enumerate(prompts)]


def _trainer_logprobs(model, request: SampleRequest, token_ids: list[int]) -> torch.Tensor:
    from engine.rl.objective import sequence_logprobs

    ids = torch.tensor([list(request.prompt_ids) + token_ids])
    with torch.no_grad():
        return sequence_logprobs(model, ids, torch.ones_like(ids))[0, len(request.prompt_ids) - 1:]


def _norm_adapter(model_dir: Path, out: Path) -> Path:
    """An adapter as tiny's SFT leaves one: LoRA plus the norms trained in full (modules_to_save)."""
    model = _lora(model_dir, seed=3, scale=0.02, modules_to_save=["norm"])
    _nudge(model, 0.3, part="modules_to_save")
    model.save_pretrained(str(out))
    return out


# ---------------------------------------------------------------------------------------------- the CLI, as users
def test_train_grpo_model_tiny_sampler_vllm_starts_a_server_on_the_merged_base_and_stops_it(real_vllm, home, store,
                                                                                           tmp_path):
    """`sandmle train grpo --model tiny --sampler vllm` for 2 steps from an adapter that trained the norms in full:
    the run starts vLLM itself (found with no variable set) in float32 on a copy of tiny with those norms merged in,
    samples every step from the adapter just published (the probe passes, log-probs equal the trainer's), keeps the
    norms frozen, and stops the whole server when it ends."""
    env_id = register_tiny_env(store)
    adapter = _norm_adapter(tiny.ensure(home), tmp_path / "sft-adapter")
    proc = _sandmle(home, "train", "grpo", "--model", "tiny", "--adapter", str(adapter), "--env-ids", env_id,
                    "--steps", "2", "--envs-per-step", "1", "--group-size", "2", "--max-turns", "2", "--equal-group",
                    "downweight", "--sampler",
                    "vllm", "--json")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    summary = json.loads(out)
    run_id = summary["run_id"]
    assert summary["steps_done"] == 2 and summary["status"] == "done"
    assert any("stay frozen and are served merged into the base" in w for w in summary["warnings"])
    metrics = store.runs.metrics(run_id, ["stale", "sampler_logp_diff", "trained_trajectories", "sampler_requests"])
    assert [v for _, v in metrics["stale"]] == [0.0, 0.0]
    assert [v for _, v in metrics["trained_trajectories"]] == [2.0, 2.0]
    assert all(v < 1e-3 for _, v in metrics["sampler_logp_diff"]), metrics["sampler_logp_diff"]
    sampler_dir = home / "runs" / run_id / "sampler"
    first = (sampler_dir / "vllm.log").read_text(errors="replace").splitlines()[0]
    assert f"serve {sampler_dir / 'base'} --enable-lora" in first and "--dtype float32" in first
    assert "(make vllm:" in first or "(PATH)" in first  # no variable named it
    assert json.loads((sampler_dir / "base" / "sandmle-merged.json").read_text())["merged"]
    published = json.loads((sampler_dir / "adapters" / "policy-step-2" / "adapter_config.json").read_text())
    assert published["modules_to_save"] is None  # LoRA only: the norms are in the base
    # the norms stayed as the adapter had them; what vLLM served last is the final checkpoint's LoRA
    from safetensors.torch import load_file

    before = load_file(str(adapter / "adapter_model.safetensors"))
    after = load_file(str(Path(summary["adapter"]) / "adapter_model.safetensors"))
    norms = [k for k in before if ".lora_" not in k]
    assert len(norms) == 9 and all(torch.equal(before[k], after[k]) for k in norms)
    last = load_file(str(sampler_dir / "adapters" / "policy-step-2" / "adapter_model.safetensors"))
    assert sorted(last) == sorted(k for k in after if ".lora_" in k)
    assert all(torch.equal(last[k], after[k]) for k in last)
    served = subprocess.run(["pgrep", "-f", str(sampler_dir / "base")], capture_output=True, text=True).stdout.split()
    assert not served  # the server the run started is gone


# ---------------------------------------------------------------------------------------------- one shared server
def test_the_server_was_started_in_the_trainers_dtype(served):
    log = served.log.read_text(errors="replace")
    assert "--dtype float32" in log.splitlines()[0]
    assert "dtype=torch.float32" in log  # vLLM's own account of its engine


def test_the_requests_the_sampler_sends_are_what_vllm_answers(served, tmp_path, monkeypatch):
    sent: list[tuple[str, dict | None]] = []
    real_http = vllm_server.http

    def recording(method, url, body=None, timeout_s=600.0):
        sent.append((url.removeprefix(served.url), body))
        return real_http(method, url, body, timeout_s)

    monkeypatch.setattr(vllm_server, "http", recording)
    model = _lora(served.model)
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    assert sampler.base == str(served.model)
    with pytest.raises(SamplerError, match="no adapter published"):
        sampler.generate(_requests(served.model)[:1])
    sampler.publish(model, 1)
    routes = [path for path, _ in sent]
    assert routes[-4:] == ["/v1/models", "/v1/load_lora_adapter", "/v1/models", "/v1/completions"]  # list, probe
    probe = sent[-1][1]
    assert probe["prompt_logprobs"] == 0 and probe["max_tokens"] == 1 and probe["model"] == "policy-step-1"
    requests = _requests(served.model)
    samples = sampler.generate(requests)
    bodies = [b for p, b in sent[-len(requests):] if p == "/v1/completions"]
    assert sorted(b["prompt"] for b in bodies) == sorted(list(r.prompt_ids) for r in requests)
    for b in bodies:
        assert b["model"] == "policy-step-1" and b["logprobs"] == 0 and b["return_tokens_as_token_ids"]
        assert b["return_token_ids"] and b["skip_special_tokens"] is False and b["max_tokens"] == 24
    for r, s in zip(requests, samples):
        assert s.version == 1 and 1 <= len(s.token_ids) <= 24 and len(s.logprobs) == len(s.token_ids)
        assert s.finish_reason == ("stop" if s.token_ids[-1] in r.stop_ids else "length")
    again = sampler.generate(requests)  # each request's own seed: the same tokens again, alone or together
    assert [s.token_ids for s in again] == [s.token_ids for s in samples]
    assert sampler.generate(requests[2:3])[0].token_ids == samples[2].token_ids
    assert sampler.stats.requests == 9 and sampler.stats.tokens == sum(len(s.token_ids) for s in samples) * 2 + \
        len(samples[2].token_ids)


def test_concurrent_long_prompts_with_seeds_are_served_whole(served, tmp_path):
    """8 seeded requests of 1,500-token prompts at once: more than one step's token budget, which vLLM built for CPU
    splits with chunked prefill and then crashes its engine on ("CPU Generator does not use offset"); the launcher
    turns chunked prefill off there, so every request is answered and the engine stays up."""
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    sampler.publish(_lora(served.model, seed=2), 1)
    prompt = tuple(vllm_server.probe_ids(2000, 1500))
    requests = [SampleRequest(prompt[i:] + prompt[:i], 8, temperature=1.0, seed=i) for i in range(8)]
    samples = sampler.generate(requests)
    assert [len(s.token_ids) for s in samples] == [8] * 8 and {s.version for s in samples} == {1}
    assert "--no-enable-chunked-prefill" in served.log.read_text(errors="replace").splitlines()[0]
    assert vllm_server.http("GET", served.url + "/health")[0] == 200
    assert sampler.stats.prefill_tokens + sampler.stats.cached_tokens == 8 * 1500


def test_an_adapter_published_while_samples_are_drawn_leaves_the_engine_up(served, tmp_path):
    """Overlapped training (``--max-staleness 1``) publishes the next adapter — a load, then the probe's
    prompt-log-prob request — while the samples of the next step are still being drawn under the previous one.
    With LoRA on its LM head (vLLM's default) vLLM built for CPU batched the probe with those requests and its
    engine died ("einsum(): subscript b has size 2 ... size 47"); the launcher puts LoRA on the adapters' layers
    only, so every sample in flight finishes under the old adapter and the next ones come from the new."""
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    sampler.publish(_lora(served.model, seed=6), 1)
    new = _lora(served.model, seed=7)
    # 12 x 1,200 tokens, no stop token: seconds even on an idle machine (6 x 400 once finished within 0.5 s there)
    requests = [dataclasses.replace(r, stop_ids=()) for r in _requests(served.model, n=12, max_new=1200)]
    with ThreadPoolExecutor(max_workers=1) as pool:
        drawing = pool.submit(sampler.generate, requests)
        time.sleep(0.1)  # the requests sent and decoding
        assert not drawing.done(), "the samples finished before the publish: nothing overlapped"
        sampler.publish(new, 2)
        in_flight = drawing.result()
    # every sample in flight finishes, under the old adapter (at 1,200 tokens, or earlier at the end-of-text token)
    assert {s.version for s in in_flight} == {1} and all(1 <= len(s.token_ids) <= 1200 for s in in_flight)
    assert sum(len(s.token_ids) for s in in_flight) > 6 * 1200
    after = sampler.generate(requests[:3])
    assert {s.version for s in after} == {2}
    for r, s in zip(requests, after):
        assert (_trainer_logprobs(new, r, s.token_ids) - torch.tensor(s.logprobs)).abs().max() < 1e-4
    assert vllm_server.http("GET", served.url + "/health")[0] == 200
    argv = served.log.read_text(errors="replace").splitlines()[0]
    assert "--lora-target-modules" in argv and "lm_head" not in argv


def test_each_published_adapter_is_sampled_from_with_the_trainers_logprobs(served, tmp_path):
    model = _lora(served.model, seed=1)
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    requests = _requests(served.model)
    drawn = []
    for version in (1, 2, 3):  # an update, then publish: every step
        if version > 1:
            _nudge(model, 0.3)
        sampler.publish(model, version)
        assert [c["id"] for c in sampler.models()] == [str(served.model), f"policy-step-{version}"]
        assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == [f"policy-step-{version}"]
        samples = sampler.generate(requests)
        check_fresh([s.version for s in samples], version)
        for r, s in zip(requests, samples):
            gap = (_trainer_logprobs(model, r, s.token_ids) - torch.tensor(s.logprobs)).abs().max()
            assert gap < 1e-4, f"version {version}: engine and trainer differ by {gap}"
        drawn.append([s.logprobs for s in samples])
    assert drawn[0] != drawn[1] != drawn[2]


def test_samples_from_the_base_model_or_a_stale_adapter_are_refused(served, tmp_path):
    old, new = _lora(served.model, seed=4), _lora(served.model, seed=5)
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    sampler.publish(old, 1)
    first = sampler.generate(_requests(served.model, 2))
    sampler.publish(new, 2)
    with pytest.raises(StaleSampleError, match="version 1; expected 2"):
        check_fresh([s.version for s in first], 2)
    # a worker that missed the update asks for the adapter vLLM has unloaded: refused by the server itself
    stale = VLLMServerSampler(served.url, adapter_dir=tmp_path / "other")
    stale.lora = "policy-step-1"
    with pytest.raises(SamplerError, match="does not exist.*HTTP 404"):
        stale.generate(_requests(served.model, 1))
    # one pointed at the base model gets base samples, which the trainer refuses
    stale.lora = sampler.base
    base_samples = stale.generate(_requests(served.model, 2))
    assert [s.version for s in base_samples] == [None, None]
    with pytest.raises(StaleSampleError, match="from the base model"):
        check_fresh([s.version for s in base_samples], 2)
    # an engine holding older weights under the new adapter's name fails the probe before any sample is used
    old_dir = tmp_path / "old-weights"
    old.save_pretrained(str(old_dir))
    vllm_server.http("POST", served.url + "/v1/load_lora_adapter", {"lora_name": "policy-step-7",
                                                                     "lora_path": str(old_dir)})
    with pytest.raises(StaleSampleError, match="not sampling from the adapter just trained"):
        sampler._probe(new, "policy-step-7")
    vllm_server.http("POST", served.url + "/v1/unload_lora_adapter", {"lora_name": "policy-step-7"})


def test_adapters_vllm_refuses_are_one_clear_error(served, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters")
    too_big = get_peft_model(AutoModelForCausalLM.from_pretrained(served.model),
                             LoraConfig(r=32, target_modules=["q_proj"]))
    with pytest.raises(SamplerError, match="LoRA rank 32 is greater than max_lora_rank 16.*HTTP 500"):
        sampler.publish(too_big, 1)
    with pytest.raises(SamplerError, match="trained in full; train without lora_modules_to_save"):
        sampler.publish(_lora(served.model, modules_to_save=["norm"]), 1)


def test_norms_trained_in_full_are_served_merged_and_a_server_on_the_plain_base_is_refused(served, tmp_path):
    """What vLLM cannot load is merged: the frozen norms go into a copy of the base (the probe against the plain
    base fails, naming the merged copy); the published adapter carries only LoRA weights."""
    model = _lora(served.model, seed=6, modules_to_save=["norm"])
    _nudge(model, 0.3, part="modules_to_save")
    assert len(freeze_saved_modules(model)) == 9  # 2 layers × (input, post-attention, q, k) + the final norm
    base = merged_base(model, str(served.model), tmp_path / "base")
    assert base == str(tmp_path / "base") and merged_base(model, str(served.model), tmp_path / "base") == base
    from transformers import AutoModelForCausalLM

    merged = AutoModelForCausalLM.from_pretrained(base)
    key = "model.norm.weight"
    assert torch.equal(merged.state_dict()[key], model.get_base_model().model.norm.modules_to_save["default"].weight)
    sampler = VLLMServerSampler(served.url, adapter_dir=tmp_path / "adapters", merged=base)
    with pytest.raises(StaleSampleError, match=f"the server must serve {base}"):
        sampler.publish(model, 1)
    config = json.loads((tmp_path / "adapters" / "policy-step-1" / "adapter_config.json").read_text())
    assert config["modules_to_save"] is None


def test_a_trainer_killed_mid_step_resumes_with_the_same_server(served, home, store):
    """kill -9 of `sandmle train grpo --sampler vllm --sampler-url URL` between two steps' rollouts, then
    `sandmle runs resume`: the adapter the dead trainer left loaded is replaced, every step counted once, no sample
    stale, and the server keeps serving only the final adapter."""
    (home / "models").mkdir(exist_ok=True)
    (home / "models" / tiny.NAME).symlink_to(served.model)  # `--model tiny` is the served folder
    env_id = register_tiny_env(store)
    steps, G = 2, 4
    proc = _sandmle(home, "train", "grpo", "--model", "tiny", "--env-ids", env_id, "--steps", str(steps),
                    "--envs-per-step", "1", "--group-size", str(G), "--max-turns", "2", "--save-every", "1",
                    "--equal-group", "downweight", "--max-new-tokens", "32", "--rollout-workers", "1",
                    "--sampler", "vllm", "--sampler-url", served.url, "--name", "crash")
    deadline, run_id = time.time() + 600, None
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        runs = store.runs.list(kind="grpo")
        if runs:
            run_id = runs[0]["id"]
            ck = store.runs.latest_checkpoint(run_id)
            if ck is not None and ck["step"] < steps:
                n_next = len([t for t in store.trajectories.list(run_id=run_id) if t.step == ck["step"] + 1])
                if 0 < n_next < G:
                    break
        time.sleep(0.05)
    else:
        pytest.fail("the run never reached a checkpoint")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = [c["id"] for c in VLLMServerSampler(served.url, adapter_dir=home / "x").models()]
    assert len(left) == 2 and left[1].startswith("policy-step-")  # what the dead trainer had loaded

    res = _sandmle(home, "runs", "resume", run_id, "--json")
    out, err = res.communicate(timeout=900)
    assert res.returncode == 0, err[-3000:]
    assert json.loads(out)["steps_done"] == steps
    metrics = store.runs.metrics(run_id, ["reward_mean", "stale", "sampler_logp_diff"])
    assert [s for s, _ in metrics["reward_mean"]] == list(range(1, steps + 1))
    assert all(v == 0 for _, v in metrics["stale"]) and all(v < 1e-3 for _, v in metrics["sampler_logp_diff"])
    keys = [(t.step, t.group_id, t.rng_seed) for t in store.trajectories.list(run_id=run_id)]
    assert len(keys) == len(set(keys)) == steps * G
    assert [c["id"] for c in VLLMServerSampler(served.url, adapter_dir=home / "x").models()] == \
        [str(served.model), f"policy-step-{steps}"]
    shutil.rmtree(home / "x", ignore_errors=True)
