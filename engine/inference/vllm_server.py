"""``vllm`` server — sampling from a ``vllm serve MODEL --enable-lora`` process over its OpenAI-compatible API.

Requests go to ``/v1/completions`` with the prompt as token ids (``prompt: [ids]``), ``logprobs: 0`` and
``return_tokens_as_token_ids`` / ``return_token_ids``, so the exact ids and their log-probs come back (the server
is started with ``--logprobs-mode processed_logprobs``: log-probs after temperature and top-p, as the hf sampler
reports them). vLLM batches concurrent requests itself (continuous batching); each request carries its own seed.

After every update the trainer publishes the adapter: it is saved under ``<adapter_dir>/policy-step-N``, loaded
with ``/v1/load_lora_adapter`` as ``policy-step-N``, checked in ``/v1/models`` (name and path), checked by a probe
(the engine's prompt log-probs of a fixed token sequence must match the trainer's own under the same weights:
an engine that loaded the adapter but samples from the base model, or from an older adapter, fails here), and only
then does sampling switch to it and the previous adapter get unloaded. Every response names the adapter that
served it; a sample from any other adapter (or the base model) is refused.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from .base import Sample, SampleRequest, SamplerError, SamplerStats, StaleSampleError, adapter_name, adapter_version

#: the ranks vLLM accepts for --max-lora-rank
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: replaces ``vllm serve`` when the server is started for you (e.g. a wrapper script or a container)
COMMAND_ENV = "SANDMLE_VLLM_COMMAND"
PROBE_LEN = 48


def probe_ids(vocab_size: int, n: int = PROBE_LEN) -> list[int]:
    """A fixed token sequence spread over the vocabulary (any ids will do: it compares two engines' log-probs)."""
    return [(17 + 7919 * i) % vocab_size for i in range(n)]


def _error(raw: bytes) -> str:
    """The message of a vLLM error body (``{"error": {"message": ...}}``, or FastAPI's ``{"detail": ...}``)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace").strip()[:300]
    err = data.get("error", data) if isinstance(data, dict) else data
    return str(err.get("message") or err.get("detail") or err) if isinstance(err, dict) else str(err)


def http(method: str, url: str, body: dict | None = None, timeout_s: float = 600.0) -> tuple[int, bytes]:
    """(status, body) of one JSON request; connection errors raise :class:`SamplerError`."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except (urllib.error.URLError, OSError) as exc:
        raise SamplerError(f"vLLM server {url} unreachable: {exc}") from None


class VLLMServerSampler:
    def __init__(self, url: str, *, adapter_dir: str | Path, check_tol: float = 0.05, timeout_s: float = 600.0,
                 process: subprocess.Popen | None = None):
        self.url = url.rstrip("/")
        self.name = f"vllm:{self.url}"
        self.adapter_dir = Path(adapter_dir)
        self.check_tol = float(check_tol)
        self.process = process
        self.timeout_s = float(timeout_s)
        self.version = 0
        self.lora: str | None = None
        self.stats = SamplerStats()
        self.base = self.models()[0]["id"]

    # ------------------------------------------------------------------ HTTP
    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        """The JSON answer (or vLLM's plain-text success of the adapter routes) of one request."""
        status, raw = http(method, self.url + path, body, self.timeout_s)
        if status != 200:
            raise SamplerError(f"vLLM {path}: {_error(raw)} (HTTP {status})")
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def models(self) -> list[dict[str, Any]]:
        """The served models: the base first, then one card per loaded adapter (``root`` = its path)."""
        return list(self._call("GET", "/v1/models")["data"])

    # ------------------------------------------------------------------ sampling
    def generate(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        lora = self.lora
        if lora is None:
            raise SamplerError("no adapter published to the vLLM server yet: the trainer publishes one before sampling")
        if len(requests) == 1:
            return [self._one(requests[0], lora)]
        with ThreadPoolExecutor(max_workers=len(requests)) as pool:
            return list(pool.map(lambda r: self._one(r, lora), requests))

    def _one(self, r: SampleRequest, lora: str) -> Sample:
        t0 = time.perf_counter()
        body = {"model": lora, "prompt": list(r.prompt_ids), "max_tokens": r.max_new_tokens,
                "temperature": r.temperature, "top_p": r.top_p, "seed": r.seed, "logprobs": 0,
                "return_tokens_as_token_ids": True, "return_token_ids": True, "stop_token_ids": list(r.stop_ids),
                "skip_special_tokens": False}
        data = self._call("POST", "/v1/completions", body)
        if data.get("model") != lora:
            raise StaleSampleError(f"asked vLLM for adapter {lora}, it answered with {data.get('model')!r}")
        choice = data["choices"][0]
        lp = choice.get("logprobs") or {}
        ids = [int(t.split(":", 1)[1]) for t in lp.get("tokens", [])]
        if choice.get("token_ids") is not None and list(choice["token_ids"]) != ids:
            raise SamplerError("vLLM returned token ids that disagree with its log-prob tokens")
        logprobs = [float(x) for x in lp.get("token_logprobs", [])]
        if not ids or len(logprobs) != len(ids):
            raise SamplerError("vLLM returned no token ids / log-probs (is it a vLLM server?)")
        usage = data.get("usage") or {}
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        with self.stats.lock:  # one request = one "batch" here: vLLM batches on its side
            self.stats.requests += 1
            self.stats.batches += 1
            self.stats.tokens += len(ids)
            self.stats.busy_s += time.perf_counter() - t0
            self.stats.prefill_tokens += int(usage.get("prompt_tokens") or len(r.prompt_ids)) - cached
            self.stats.cached_tokens += cached
        finish = "stop" if choice.get("finish_reason") == "stop" else "length"
        return Sample(ids, logprobs, finish, adapter_version(data["model"]))

    # ------------------------------------------------------------------ adapters
    def publish(self, model: Any, version: int) -> None:
        name = adapter_name(version)
        config = getattr(model, "peft_config", {}).get("default")
        if config is not None and getattr(config, "modules_to_save", None):
            raise SamplerError("vLLM serves LoRA weights only: train without lora_modules_to_save to sample with vLLM")
        path = self.adapter_dir / name
        if path.exists():
            shutil.rmtree(path)
        model.save_pretrained(str(path))
        if any(c["id"] == name for c in self.models()):  # left by an earlier process (resume): reload it
            self._call("POST", "/v1/unload_lora_adapter", {"lora_name": name})
        self._call("POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        cards = {c["id"]: c for c in self.models()}
        if cards.get(name, {}).get("root") != str(path):
            raise StaleSampleError(f"vLLM does not list {name} at {path} after loading it")
        self._probe(model, name)
        old, self.lora, self.version = self.lora, name, int(version)
        for card in cards:  # the previous adapter, and any other policy adapter an earlier process left behind
            if card != name and adapter_version(card) is not None:
                self._call("POST", "/v1/unload_lora_adapter", {"lora_name": card})
        if old and old != name:
            shutil.rmtree(self.adapter_dir / old, ignore_errors=True)

    def _probe(self, model: Any, name: str) -> None:
        """The engine's log-probs of the probe sequence under ``name`` must be the trainer's under ``model``."""
        import torch  # heavy optional dependency

        ids = probe_ids(int(model.config.vocab_size))
        data = self._call("POST", "/v1/completions", {"model": name, "prompt": ids, "max_tokens": 1,
                                                      "temperature": 0.0, "prompt_logprobs": 0})
        served = data["choices"][0].get("prompt_logprobs") or []
        engine = [float(served[i][str(t)]["logprob"]) for i, t in enumerate(ids) if i > 0]
        device = next(model.parameters()).device
        with torch.no_grad():
            x = torch.tensor([ids], device=device)
            logits = model(input_ids=x, attention_mask=torch.ones_like(x)).logits[0, :-1].float()
            mine = logits.log_softmax(-1).gather(1, x[0, 1:, None]).squeeze(-1).tolist()
        gap = sum(abs(a - b) for a, b in zip(engine, mine)) / len(mine)
        if gap > self.check_tol:
            raise StaleSampleError(f"vLLM's log-probs under {name} differ from the trainer's by {gap:.3f} per token "
                                   f"(tolerance {self.check_tol}): it is not sampling from the adapter just trained")

    def sleep(self) -> None:
        """The server has its own GPU memory: nothing to free."""

    def wake_up(self) -> None:
        """See :meth:`sleep`."""

    def close(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None


# ---------------------------------------------------------------------------------------------- the process
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def launch_server(model_path: str, *, lora_rank: int, log_path: str | Path, port: int | None = None,
                  startup_s: float = 900.0) -> tuple[str, subprocess.Popen]:
    """Start ``vllm serve MODEL --enable-lora ...`` (or ``$SANDMLE_VLLM_COMMAND MODEL ...``) on 127.0.0.1 with
    runtime adapter loading allowed; wait until ``/health`` answers. Returns (url, process)."""
    port = port or _free_port()
    rank = next((r for r in VLLM_LORA_RANKS if r >= lora_rank), lora_rank)
    command = shlex.split(os.environ.get(COMMAND_ENV, "vllm serve"))
    argv = [*command, model_path, "--enable-lora", "--max-lora-rank", str(rank), "--max-loras", "2",
            "--host", "127.0.0.1", "--port", str(port), "--logprobs-mode", "processed_logprobs"]
    env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        try:
            proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except FileNotFoundError:
            raise SamplerError(f"cannot start {argv[0]!r}: install vLLM (pip install 'sandmle[vllm]') on this "
                               "machine, or pass --sampler-url of a running server") from None
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = Path(log_path).read_text(errors="replace").strip().splitlines()[-3:]
            raise SamplerError(f"the vLLM server exited ({proc.returncode}): {' | '.join(tail)} (log: {log_path})")
        try:
            if http("GET", f"{url}/health", timeout_s=2)[0] == 200:
                return url, proc
        except SamplerError:
            pass
        time.sleep(0.5)
    stop_process(proc)
    raise SamplerError(f"the vLLM server did not answer within {startup_s:.0f} s (log: {log_path})")
