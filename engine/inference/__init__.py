"""Sampling: one interface (:class:`Sampler`), token ids in, token ids + log-probs + finish reason out.

Backends, one module each, imported lazily: ``hf`` (batched in-process generation, CPU and one GPU),
``vllm_server`` (a ``vllm serve --enable-lora`` process over its OpenAI-compatible API) and ``vllm_colocated``
(an in-process ``vllm.LLM`` on the training GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

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
from ..config import load_settings
from .hf import HFSampler
from .served import lora_layers, merged_base
from .vllm_colocated import VLLMColocatedSampler
from .vllm_server import VLLMServerSampler, launch_server, served_dtype, stop_process

if TYPE_CHECKING:  # heavy: only the type of the live model a sampler serves
    import torch

__all__ = ["Sample", "SampleRequest", "Sampler", "SamplerError", "SamplerStats", "StaleSampleError",
           "adapter_name", "adapter_version", "check_fresh", "make_sampler", "SAMPLERS"]

SAMPLERS = ("hf", "vllm", "vllm-colocated")


def make_sampler(kind: str, model: torch.nn.Module, *, model_path: str, work_dir: str | Path,
                 url: str | None = None, max_batch: int = 16, wait_ms: float = 5.0, prefix_cache_tokens: int = 32768,
                 lora_rank: int = 16, seed: int = 0, warn: Callable[[str], None] | None = None) -> Sampler:
    """The sampler a trainer uses for its live ``model``: ``hf`` shares it in memory; ``vllm`` talks to the server
    at ``url`` or starts one (log in ``work_dir/vllm.log``) in the trainer's dtype unless ``[vllm] dtype`` says
    otherwise (``warn`` hears of the mismatch); ``vllm-colocated`` loads the model into an in-process vLLM engine.
    vLLM loads ``model_path``, or a copy of it under ``work_dir/base`` with the modules ``model`` trains in full
    merged in (:mod:`.served`); adapters published to vLLM go under ``work_dir/adapters``."""
    work = Path(work_dir)
    if kind == "hf":
        return HFSampler(model, max_batch=max_batch, wait_ms=wait_ms,
                         prefix_cache_tokens=prefix_cache_tokens)
    if kind == "vllm":
        if url is not None:
            return VLLMServerSampler(url, adapter_dir=work / "adapters")
        settings = load_settings().vllm
        base = merged_base(model, model_path, work / "base")
        url, process = launch_server(base, lora_rank=lora_rank, log_path=work / "vllm.log", settings=settings,
                                     dtype=served_dtype(model, settings.dtype, warn), lora_targets=lora_layers(model))
        try:
            return VLLMServerSampler(url, adapter_dir=work / "adapters", process=process,
                                     merged=None if base == model_path else base, log_path=work / "vllm.log")
        except BaseException:
            stop_process(process)
            raise
    if kind == "vllm-colocated":
        return VLLMColocatedSampler(merged_base(model, model_path, work / "base"), adapter_dir=work / "adapters",
                                    lora_rank=lora_rank, max_batch=max_batch, wait_ms=wait_ms, seed=seed,
                                    dtype=served_dtype(model, load_settings().vllm.dtype, warn))
    raise SamplerError(f"unknown sampler {kind!r}; expected one of {', '.join(SAMPLERS)}")
