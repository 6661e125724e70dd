"""tiny's training recipe: the defaults that depend on the model. ``tiny`` and folders made from it get the
settings that ``sandmle bench learn`` shows can learn on a CPU; any other model keeps the config classes' own
defaults. A config file or flags override either (:func:`engine.rl.config.load_config`
applies these to the keys neither sets)."""

from __future__ import annotations

from typing import Any

from . import MAX_NEW_TOKENS, MAX_TURNS, TEMPERATURE, is_tiny

_LORA = {"lora_r": 16, "lora_alpha": 32, "lora_modules_to_save": ["norm"]}
#: SFT on the scripted teacher's valid demonstrations (reward >= 0.2: a valid submission)
TINY_SFT: dict[str, Any] = {**_LORA, "lr": 1e-2, "epochs": 4.0, "batch_size": 2, "min_reward": 0.2,
                            "max_seq_len": 4096}
#: trajectory-wise GRPO from the SFT adapter, sampling as ``hf:tiny`` does
TINY_GRPO: dict[str, Any] = {**_LORA, "lr": 5e-4, "temperature": TEMPERATURE,
                             "max_new_tokens": MAX_NEW_TOKENS, "max_turns": MAX_TURNS,
                             "envs_per_step": 2, "group_size": 4, "micro_batch": 2, "max_seq_len": 4096,
                             "step_timeout_s": 120.0, "episode_timeout_s": 600.0,
                             # every step's adapter is kept, so each rollout's policy (RUN_ID@STEP) loads again
                             "save_every": 1}


#: what GRPO with a vLLM sampler trains of tiny: LoRA only. vLLM serves LoRA weights, not modules trained in full, so
#: the norms stay as SFT left them (served merged into the base, :mod:`engine.inference.served`); with the hf
#: sampler GRPO keeps training them too (TINY_GRPO: what ``bench learn`` measures)
TINY_GRPO_VLLM: dict[str, Any] = {**TINY_GRPO, "lora_modules_to_save": []}


def defaults(kind: str, model: str | None, sampler: str | None = None) -> dict[str, Any]:
    """The model-dependent settings of a ``kind`` ("sft" or "grpo") run: ``tiny``'s, for tiny and the folders made
    from it (for a GRPO run sampling with vLLM, ``sampler`` ≠ hf: without modules trained in full), else none."""
    table = {"sft": TINY_SFT, "grpo": TINY_GRPO if sampler in (None, "hf") else TINY_GRPO_VLLM}
    if kind not in table:
        raise ValueError(f"unknown run kind {kind!r}; expected sft or grpo")
    if not is_tiny(model):
        return {}
    return {k: list(v) if isinstance(v, list) else v for k, v in table[kind].items()}
