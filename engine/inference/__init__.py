"""Sampling: one interface (:class:`Sampler`), token ids in, token ids + log-probs + finish reason out.

Backends, one module each, imported lazily: ``hf`` (batched in-process generation, CPU and one GPU),
``vllm_server`` (a ``vllm serve --enable-lora`` process over its OpenAI-compatible API) and ``vllm_colocated``
(an in-process ``vllm.LLM`` on the training GPU)."""

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

__all__ = ["Sample", "SampleRequest", "Sampler", "SamplerError", "SamplerStats", "StaleSampleError",
           "adapter_name", "adapter_version", "check_fresh"]
