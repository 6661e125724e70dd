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
served it; a sample from any other adapter (or the base model) is refused. Modules the adapter trains in full
(``modules_to_save``) are served merged into the base (:mod:`.served`); the adapters carry LoRA weights only.

Which ``vllm`` starts (:func:`find_vllm`): ``SANDMLE_VLLM_COMMAND``, else the ``[vllm] command`` setting, else
``.venv-vllm/bin/vllm`` beside the project's virtual env (``make vllm``: vLLM built for CPU, or ``pip install vllm``
on a GPU machine), else ``vllm`` beside this interpreter or on ``PATH``. A server started here runs in the trainer's
dtype (``--dtype``; the ``[vllm] dtype`` setting overrides it, and the mismatch is reported), in its own process
group (stopped as a whole), and is told to exit with the process that started it (a trainer killed by SIGKILL
leaves no server behind).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..config import VLLMSettings, load_settings
from ..models.adapters import LORA_TARGETS
from .base import Sample, SampleRequest, SamplerError, SamplerStats, StaleSampleError, adapter_name, adapter_version
from .served import saved_modules, save_lora, trained_saved_modules

#: the ranks vLLM accepts for --max-lora-rank
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: replaces ``vllm serve`` when the server is started for you (e.g. a wrapper script or a container)
COMMAND_ENV = "SANDMLE_VLLM_COMMAND"
#: the virtual env ``make vllm`` creates beside ``.venv``, its stamp (the version) and its failure note
VENV = ".venv-vllm"
STAMP = ".sandmle-vllm-installed"
FAILED = ".sandmle-vllm-failed"
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


def log_excerpt(log_path: str | Path, lines: int = 3) -> str:
    """What a server's log says went wrong: its last exception lines (vLLM's HTTP errors say only "see the stack
    trace above"), else its last lines; "" where there is no log."""
    try:
        text = Path(log_path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    raised = [line for line in text if re.search(r"\b\w*(Error|Exception): ", line)]
    picked = list(dict.fromkeys(line.split("] ", 1)[-1].strip() for line in raised))[-lines:] or text[-lines:]
    return " | ".join(picked)


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
                 process: subprocess.Popen | None = None, merged: str | None = None,
                 log_path: str | Path | None = None):
        self.url = url.rstrip("/")
        #: the log of a server this sampler started (its errors then say what the log says)
        self.log_path = Path(log_path) if log_path else None
        #: the base copy with the modules trained in full merged in, that the server was started on (or None)
        self.merged = merged
        self.name = f"vllm:{self.url}"
        self.adapter_dir = Path(adapter_dir)
        self.check_tol = float(check_tol)
        self.process = process
        self.timeout_s = float(timeout_s)
        self.version = 0
        self.lora: str | None = None
        self.stats = SamplerStats()
        #: adapter name → the generate() calls drawing under it now; an adapter a publish replaced while some are
        #: (overlapped training) is unloaded when the last of them ends, never under a request not yet sent
        self._drawing: dict[str, int] = {}
        self._retired: set[str] = set()
        self._adapters_lock = threading.Lock()
        self.base = self.models()[0]["id"]

    # ------------------------------------------------------------------ HTTP
    def _call(self, method: str, path: str, body: dict | None = None) -> Any:
        """The JSON answer (or vLLM's plain-text success of the adapter routes) of one request."""
        status, raw = http(method, self.url + path, body, self.timeout_s)
        if status != 200:
            cause = log_excerpt(self.log_path) if self.log_path and status >= 500 else ""
            raise SamplerError(f"vLLM {path}: {_error(raw)} (HTTP {status})"
                               + (f"; its log ({self.log_path}) says: {cause}" if cause else ""))
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    def models(self) -> list[dict[str, Any]]:
        """The served models: the base first, then one card per loaded adapter (``root`` = its path)."""
        return list(self._call("GET", "/v1/models")["data"])

    # ------------------------------------------------------------------ sampling
    def generate(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        with self._adapters_lock:  # the adapter read and counted at once: a publish cannot unload it in between
            lora = self.lora
            if lora is not None:
                self._drawing[lora] = self._drawing.get(lora, 0) + 1
        if lora is None:
            raise SamplerError("no adapter published to the vLLM server yet: the trainer publishes one before sampling")
        try:
            if len(requests) == 1:
                return [self._one(requests[0], lora)]
            with ThreadPoolExecutor(max_workers=len(requests)) as pool:
                return list(pool.map(lambda r: self._one(r, lora), requests))
        finally:
            with self._adapters_lock:
                self._drawing[lora] -= 1
                done = self._drawing[lora] == 0 and lora in self._retired
                if done:
                    self._retired.discard(lora)
            if done:
                self._unload(lora)

    def _unload(self, name: str) -> None:
        """Unload a policy adapter from the server and remove its folder (ours, under adapter_dir)."""
        self._call("POST", "/v1/unload_lora_adapter", {"lora_name": name})
        shutil.rmtree(self.adapter_dir / name, ignore_errors=True)

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
        trained = trained_saved_modules(model)
        if trained:  # frozen ones are served merged into the base; trained ones would change after every update
            raise SamplerError(f"vLLM serves LoRA weights only: {', '.join(trained[:3])}"
                               f"{' …' if len(trained) > 3 else ''} are trained in full; train without "
                               "lora_modules_to_save to sample with vLLM")
        path = self.adapter_dir / name
        if path.exists():
            shutil.rmtree(path)
        save_lora(model, path)
        if any(c["id"] == name for c in self.models()):  # left by an earlier process (resume): reload it
            self._call("POST", "/v1/unload_lora_adapter", {"lora_name": name})
        self._call("POST", "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)})
        cards = {c["id"]: c for c in self.models()}
        if cards.get(name, {}).get("root") != str(path):
            raise StaleSampleError(f"vLLM does not list {name} at {path} after loading it")
        self._probe(model, name)
        with self._adapters_lock:
            self.lora, self.version = name, int(version)
            # the previous adapter, and any other policy adapter an earlier process left behind: unloaded now, or,
            # where samples are still being drawn under it, when the last of them is done
            now = [c for c in cards if c != name and adapter_version(c) is not None and not self._drawing.get(c)]
            self._retired |= {c for c in cards if c != name and adapter_version(c) is not None} - set(now)
        for card in now:
            self._unload(card)

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
            merged = saved_modules(model)
            hint = (f" (the {len(merged)} weights this adapter trained in full are served merged into the base: "
                    f"the server must serve {self.merged or 'the merged copy --sampler vllm starts it on'})"
                    if merged else "")
            raise StaleSampleError(f"vLLM's log-probs under {name} differ from the trainer's by {gap:.3f} per token "
                                   f"(tolerance {self.check_tol}): it is not sampling from the adapter just trained"
                                   + hint)

    def sleep(self) -> None:
        """The server has its own GPU memory: nothing to free."""

    def wake_up(self) -> None:
        """See :meth:`sleep`."""

    def close(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None


# ---------------------------------------------------------------------------------------------- the process
@dataclass(frozen=True)
class VLLMCommand:
    argv: list[str]  #: what replaces ``vllm serve``
    source: str  #: where it was found (for messages and ``sandmle doctor``)
    version: str | None = None


def _venvs() -> list[Path]:
    """Where ``make vllm`` puts its virtual env: beside this checkout's ``.venv`` and beside the running one."""
    here = Path(__file__).resolve().parents[2] / VENV
    beside = Path(sys.prefix).resolve().parent / VENV
    return [here] if here == beside else [here, beside]


def _dist_version(bin_dir: Path) -> str | None:
    """The version of the ``vllm`` distribution installed in the virtual env of ``bin_dir``, if any."""
    for meta in sorted(bin_dir.parent.glob("lib/python*/site-packages/vllm-*.dist-info/METADATA")):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def find_vllm(configured: str | None = None) -> VLLMCommand | None:
    """The command that starts a vLLM server: ``SANDMLE_VLLM_COMMAND``, the ``[vllm] command`` setting
    (``configured``), ``make vllm``'s virtual env, or a ``vllm`` beside this interpreter or on ``PATH``."""
    if os.environ.get(COMMAND_ENV):
        return VLLMCommand(shlex.split(os.environ[COMMAND_ENV]), COMMAND_ENV)
    if configured:
        return VLLMCommand(shlex.split(configured), "[vllm] command")
    for venv in _venvs():
        made = venv / "bin" / "vllm"
        if made.is_file() and (venv / STAMP).is_file():
            return VLLMCommand([str(made), "serve"], f"make vllm: {venv}", _dist_version(made.parent))
    beside = Path(sys.executable).parent / "vllm"
    for exe in (str(beside) if beside.is_file() else None, shutil.which("vllm")):
        if exe is not None:
            return VLLMCommand([exe, "serve"], "PATH", _dist_version(Path(exe).parent))
    return None


def missing_vllm() -> str:
    """Why no vLLM is found, with the fix (a failed ``make vllm`` says what failed)."""
    failed = next((v / FAILED for v in _venvs() if (v / FAILED).is_file()), None)
    why = f"make vllm failed here: {failed.read_text().strip()}; " if failed else ""
    return (f"no vLLM found ({why}run `make vllm`: vLLM in {VENV} beside .venv — built for CPU, or pip install "
            f"vllm on a GPU machine; or set [vllm] command / {COMMAND_ENV}, or pass --sampler-url of a running "
            "server)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _signal_group(proc: subprocess.Popen, sig: int) -> bool:
    """Send ``sig`` to the server's process group (it was started as the group's leader); False when the group
    has no process left."""
    try:
        os.killpg(proc.pid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _group_gone(proc: subprocess.Popen, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _signal_group(proc, 0):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def stop_process(proc: subprocess.Popen) -> None:
    """Stop a server and every process it started (vLLM's engine core and workers): SIGTERM to its process
    group, SIGKILL to what is left after 30 s; returns when none is left."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=30)
    if not _group_gone(proc, 15):  # children that outlive the leader
        _signal_group(proc, signal.SIGKILL)
        _group_gone(proc, 15)


#: run before the server's own command: SIGTERM when the starting process dies (Linux prctl PR_SET_PDEATHSIG),
#: then exec — so a trainer killed with SIGKILL takes its server with it
_TIED = ("import ctypes, os, signal, sys; ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM); "
         "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execvp(sys.argv[2], sys.argv[2:])")


#: what a vLLM built for CPU needs here: whole prompts per step (its chunked prefill crashes the engine on a
#: request with a seed — "CPU Generator does not use offset" in vLLM 0.32.0 — once concurrent prompts exceed the
#: step's token budget and one is split)
CPU_FALLBACK_LEN = 8192


def _model_len(model_path: str, max_model_len: int | None) -> tuple[int, bool]:
    """(the longest sequence the server will take, whether ``--max-model-len`` must say so): the setting, else the
    model's own ``max_position_embeddings``, else :data:`CPU_FALLBACK_LEN` (said explicitly)."""
    if max_model_len:
        return int(max_model_len), True
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
        return int(config["max_position_embeddings"]), False
    except (OSError, ValueError, KeyError, TypeError):
        return CPU_FALLBACK_LEN, True


def is_cpu_build(found: VLLMCommand) -> bool:
    """vLLM built for CPU: its version says so (``+cpu``), or no NVIDIA GPU answers on this machine."""
    if found.version:
        return "+cpu" in found.version
    nvidia = shutil.which("nvidia-smi")
    return nvidia is None or subprocess.run([nvidia, "-L"], capture_output=True).returncode != 0


def server_argv(command: list[str], model_path: str, *, lora_rank: int, port: int, dtype: str | None,
                max_model_len: int | None, cpu: bool = False, lora_targets: Sequence[str] = LORA_TARGETS
                ) -> list[str]:
    rank = next((r for r in VLLM_LORA_RANKS if r >= lora_rank), lora_rank)
    argv = [*command, model_path, "--enable-lora", "--max-lora-rank", str(rank), "--max-loras", "2",
            "--lora-target-modules", *sorted(lora_targets),  # not the LM head (LORA_TARGETS says why)
            "--host", "127.0.0.1", "--port", str(port), "--logprobs-mode", "processed_logprobs",
            "--enable-prompt-tokens-details"]  # usage then counts the prompt tokens its prefix cache served
    argv += ["--dtype", dtype] if dtype else []
    length, say = _model_len(model_path, max_model_len) if cpu else (max_model_len or 0, bool(max_model_len))
    argv += ["--max-model-len", str(length)] if say else []
    return argv + (["--no-enable-chunked-prefill", "--max-num-batched-tokens", str(length)] if cpu else [])


def launch_server(model_path: str, *, lora_rank: int, log_path: str | Path, port: int | None = None,
                  dtype: str | None = None, settings: VLLMSettings | None = None,
                  startup_s: float | None = None, lora_targets: Sequence[str] = LORA_TARGETS
                  ) -> tuple[str, subprocess.Popen]:
    """Start ``vllm serve MODEL --enable-lora ...`` (the command :func:`find_vllm` finds) on 127.0.0.1 with runtime
    adapter loading allowed, LoRA on ``lora_targets`` only (the adapters' layers), in ``dtype`` (None: vLLM's
    choice); wait until ``/health`` answers. Returns (url, process)."""
    s = settings or load_settings().vllm
    found = find_vllm(s.command)
    if found is None:
        raise SamplerError(f"cannot start a vLLM server: {missing_vllm()}")
    port = port or _free_port()
    argv = server_argv(found.argv, model_path, lora_rank=lora_rank, port=port, dtype=dtype,
                       max_model_len=s.max_model_len, cpu=is_cpu_build(found), lora_targets=lora_targets)
    env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(s.kv_cache_gib))  # only vLLM built for CPU reads it
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    if shutil.which(argv[0]) is None:
        raise SamplerError(f"cannot start {argv[0]!r} ({found.source}): no such command; {missing_vllm()}")
    tied = [sys.executable, "-c", _TIED, str(os.getpid())] if sys.platform.startswith("linux") else []
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"sandmle: {shlex.join(argv)} ({found.source})\n".encode())
        log.flush()
        proc = subprocess.Popen([*tied, *argv], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return f"http://127.0.0.1:{port}", _wait_healthy(proc, f"http://127.0.0.1:{port}", Path(log_path),
                                                     startup_s or s.startup_s)


def _wait_healthy(proc: subprocess.Popen, url: str, log_path: Path, startup_s: float) -> subprocess.Popen:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            stop_process(proc)
            raise SamplerError(f"the vLLM server exited ({proc.returncode}): {log_excerpt(log_path)} (log: {log_path})")
        try:
            if http("GET", f"{url}/health", timeout_s=2)[0] == 200:
                return proc
        except SamplerError:
            pass
        time.sleep(0.5)
    stop_process(proc)
    raise SamplerError(f"the vLLM server did not answer within {startup_s:.0f} s (log: {log_path})")


def served_dtype(model: Any, setting: str, warn: Callable[[str], None] | None = None) -> str:
    """The ``--dtype`` of a server started for ``model``: the trainer's own unless the ``[vllm] dtype`` setting
    says otherwise (then ``warn`` is told of the mismatch)."""
    trainer = str(next(model.parameters()).dtype).removeprefix("torch.")
    if setting == "auto":
        return trainer
    if setting != trainer and warn is not None:
        warn(f"the vLLM server runs in {setting} ([vllm] dtype) and the trainer in {trainer}: their log-probs "
             "differ (sampler_logp_diff per step; the importance-sampling correction, tis_cap, weighs it)")
    return setting
