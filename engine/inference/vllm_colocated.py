"""``vllm`` colocated — an in-process ``vllm.LLM(enable_lora=True)`` on the training GPU (one-GPU servers).

Written against vLLM's documented offline API (``LLM.generate`` with ``TokensPrompt`` and per-request
``SamplingParams``, ``LoRARequest``, ``LLM.sleep`` / ``LLM.wake_up`` with ``enable_sleep_mode``); it has never run
against a real vLLM here (no GPU, no vLLM on the development machines — see docs/sampling.md). Concurrent callers are
batched by the same collector as the hf sampler and each batch is one ``LLM.generate`` call; the engine sleeps
(weights offloaded, KV cache dropped) while the trainer updates, and each published adapter gets a new name and id,
so the engine can never keep serving a cached older one (``max_loras=1``: its LRU cache evicts the old one). As
for the server, modules trained in full are merged into the base it loads and adapters carry LoRA weights only.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from .base import Batcher, Sample, SampleRequest, SamplerError, adapter_name
from .served import save_lora, trained_saved_modules
from .vllm_server import VLLM_LORA_RANKS


class VLLMColocatedSampler:
    def __init__(self, model_path: str, *, adapter_dir: str | Path, lora_rank: int, gpu_memory: float = 0.3,
                 max_batch: int = 64, wait_ms: float = 5.0, seed: int = 0, dtype: str = "auto"):
        try:
            from vllm import LLM  # heavy optional dependency (sandmle[vllm]): imported only when chosen
        except ImportError:
            raise SamplerError("the colocated vLLM sampler needs vLLM in the trainer's own environment: "
                               "pip install 'sandmle[vllm]' there (a GPU machine)") from None
        rank = next((r for r in VLLM_LORA_RANKS if r >= lora_rank), lora_rank)
        self.llm = LLM(model=model_path, enable_lora=True, max_lora_rank=rank, max_loras=1, enable_sleep_mode=True,
                       gpu_memory_utilization=gpu_memory, logprobs_mode="processed_logprobs", seed=seed, dtype=dtype)
        self.name = f"vllm-colocated:{model_path}"
        self.adapter_dir = Path(adapter_dir)
        self.version = 0
        self.lora: Any = None
        self._batcher = Batcher(self._run_batch, max_batch=max_batch, wait_ms=wait_ms, name="vllm")
        self.stats = self._batcher.stats

    def generate(self, requests: Sequence[SampleRequest]) -> list[Sample]:
        if self.lora is None:
            raise SamplerError("no adapter published to the colocated vLLM engine yet")
        return self._batcher.submit(requests)

    def _run_batch(self, requests: list[SampleRequest]) -> list[Sample]:
        from vllm import SamplingParams  # heavy optional dependency
        from vllm.inputs import TokensPrompt  # heavy optional dependency

        lora, version = self.lora, self.version
        prompts = [TokensPrompt(prompt_token_ids=list(r.prompt_ids)) for r in requests]
        params = [SamplingParams(temperature=r.temperature, top_p=r.top_p, max_tokens=r.max_new_tokens, seed=r.seed,
                                 logprobs=0, stop_token_ids=list(r.stop_ids), skip_special_tokens=False)
                  for r in requests]
        outputs = self.llm.generate(prompts, params, lora_request=lora, use_tqdm=False)
        samples = []
        for out in outputs:
            done = out.outputs[0]
            ids = list(done.token_ids)
            logprobs = [float(step[t].logprob) for step, t in zip(done.logprobs, ids)]
            samples.append(Sample(ids, logprobs, "stop" if done.finish_reason == "stop" else "length", version))
        return samples

    def publish(self, model: Any, version: int) -> None:
        """Save the adapter and sample from it under a new name and id from the next batch on."""
        from vllm.lora.request import LoRARequest  # heavy optional dependency

        name = adapter_name(version)
        if trained_saved_modules(model):
            raise SamplerError("vLLM serves LoRA weights only: train without lora_modules_to_save to sample with vLLM")
        path = self.adapter_dir / name
        if path.exists():
            shutil.rmtree(path)
        save_lora(model, path)
        with self._batcher.weights:
            old = self.lora
            self.lora, self.version = LoRARequest(name, int(version) + 1, str(path)), int(version)
        if old is not None and old.lora_name != name:  # max_loras=1: the engine's LRU drops the old one
            shutil.rmtree(self.adapter_dir / old.lora_name, ignore_errors=True)

    def sleep(self) -> None:
        """Hold new batches back, then offload the weights and drop the KV cache (level 1) for the update."""
        self._batcher.weights.acquire()
        self.llm.sleep(level=1)

    def wake_up(self) -> None:
        self.llm.wake_up()
        self._batcher.weights.release()

    def close(self) -> None:
        self._batcher.close()
