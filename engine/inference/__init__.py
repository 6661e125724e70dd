"""Sampling: one interface (:class:`Sampler`), token ids in, token ids + log-probs + finish reason out.

Backends, one module each, imported lazily: ``hf`` (batched in-process generation, CPU and one GPU),
``vllm_server`` (a ``vllm serve --enable-lora`` process over its OpenAI-compatible API) and ``vllm_colocated``
(an in-process ``vllm.LLM`` on the training GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .base import (
    Sample,
    SampleRequest,
    Sampler,
    SamplerError,
    SamplerStats,
    StaleSampleError,
    adapter_name,
    adapter_version,
    check_fresh,
)
from .hf import HFSampler
from .vllm_colocated import VLLMColocatedSampler
from .vllm_server import VLLMServerSampler, launch_server

if TYPE_CHECKING:  # heavy: only the type of the live model a sampler serves
    import torch

__all__ = ["Sample", "SampleRequest", "Sampler", "SamplerError", "SamplerStats", "StaleSampleError",
           "adapter_name", "adapter_version", "check_fresh", "make_sampler", "SAMPLERS"]

SAMPLERS = ("hf", "vllm", "vllm-colocated")


def make_sampler(kind: str, model: torch.nn.Module, *, model_path: str, work_dir: str | Path,
                 url: str | None = None, max_batch: int = 16, wait_ms: float = 5.0, prefix_cache_tokens: int = 32768,
                 lora_rank: int = 16, seed: int = 0) -> Sampler:
    """The sampler a trainer uses for its live ``model``: ``hf`` shares it in memory; ``vllm`` talks to the server
    at ``url`` or starts one on ``model_path`` (log in ``work_dir/vllm.log``); ``vllm-colocated`` loads
    ``model_path`` into an in-process vLLM engine. Adapters published to vLLM go under ``work_dir/adapters``."""
    work = Path(work_dir)
    if kind == "hf":
        return HFSampler(model, max_batch=max_batch, wait_ms=wait_ms,
                         prefix_cache_tokens=prefix_cache_tokens)
    if kind == "vllm":
        process = None
        if url is None:
            url, process = launch_server(model_path, lora_rank=lora_rank, log_path=work / "vllm.log")
        return VLLMServerSampler(url, adapter_dir=work / "adapters", process=process)
    if kind == "vllm-colocated":
        return VLLMColocatedSampler(model_path, adapter_dir=work / "adapters", lora_rank=lora_rank,
                                    max_batch=max_batch, wait_ms=wait_ms, seed=seed)
    raise SamplerError(f"unknown sampler {kind!r}; expected one of {', '.join(SAMPLERS)}")
