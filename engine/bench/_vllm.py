"""A real ``vllm serve`` for the benchmarks (``bench sampler``, ``bench train``): started once per benchmark by the
project's own launcher, in float32 (the trainer's dtype), with its startup time, CPU time and memory measured over
its whole process group (API server, engine core, worker). Where no vLLM is found, the benchmark's vLLM rows are
left out and a note says why. The server's log is kept under ``<data dir>/bench/logs/`` (:func:`log_path`); an
error while it runs names the log and its last lines (:meth:`BenchServer.explain`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from store import Store

from ..agents import tiny
from ..config import VLLMSettings, load_settings
from ..errors import SandmleError
from ..inference.base import SamplerError
from ..inference.served import merged_base
from ..inference.vllm_server import find_vllm, launch_server, log_excerpt, missing_vllm, stop_process
from ..models.adapters import final_adapter
from ..models.loading import from_pretrained

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
QUICK_NO_VLLM = "--quick leaves them out (a vLLM server takes 20-110 s to start on 2 cores)"


def log_path(store: Store, bench: str) -> Path:
    """Where a benchmark's vLLM server logs: ``<data dir>/bench/logs/<bench>-vllm-<time>.log`` (kept after the
    benchmark's temporary store is gone)."""
    return Path(store.data_dir) / "bench" / "logs" / f"{bench}-vllm-{time.strftime('%Y%m%dT%H%M%S')}.log"


class BenchServer:
    def __init__(self, model_path: str | Path, log_path: Path, *, lora_rank: int = 16):
        settings: VLLMSettings = load_settings().vllm
        found = find_vllm(settings.command)
        if found is None:
            raise SandmleError(missing_vllm())
        self.version = found.version
        self.log_path = Path(log_path)
        t0 = time.perf_counter()
        self.url, self.proc = launch_server(str(model_path), lora_rank=lora_rank, log_path=log_path, dtype="float32",
                                            settings=settings)
        self.startup_s = time.perf_counter() - t0

    def _group(self) -> list[str]:
        """The /proc/<pid>/stat fields of every process of the server's process group."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == self.proc.pid:  # field 5 of stat: the process group
                found.append(entry)
        return found

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server's live processes have used so far."""
        total = 0
        for pid in self._group():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)
            except OSError:
                continue
        return total / _TICK

    def rss_mb(self) -> float:
        total = 0
        for pid in self._group():
            try:
                with open(f"/proc/{pid}/status") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            except (OSError, StopIteration):
                continue
        return total / 1024

    def stop(self) -> None:
        stop_process(self.proc)

    def explain(self, exc: SamplerError) -> SandmleError:
        """``exc`` with what the server's log says (vLLM's errors say "see the stack trace above": it is there)."""
        alive = "running" if self.proc.poll() is None else f"exited ({self.proc.returncode})"
        return SandmleError(f"{exc}; the vLLM server ({alive}, log: {self.log_path}) says: "
                            f"{log_excerpt(self.log_path) or 'nothing'}")


def start(model_path: str | Path, log_path: Path, *, lora_rank: int = 16) -> tuple[BenchServer | None, str | None]:
    """(server, None), or (None, why there is none)."""
    try:
        return BenchServer(model_path, log_path, lora_rank=lora_rank), None
    except SandmleError as exc:
        return None, str(exc)


def tiny_server(bs: Store, sft_run: str, work: Path, log: Path, model_dir: Path | None = None
                ) -> tuple[BenchServer | None, str | None]:
    """A server on tiny (or ``model_dir``, a folder made from it) with the SFT adapter's norms merged in (vLLM
    serves LoRA weights only; with a vLLM sampler tiny's GRPO recipe keeps those norms frozen), logging to ``log``,
    or None and why there is none."""
    model_dir = model_dir or tiny.ensure(bs.data_dir)
    model, _ = from_pretrained(model_dir, adapter=final_adapter(bs, sft_run), device="cpu")
    return start(merged_base(model, str(model_dir), work / "vllm-base"), log)
