"""Helpers of the training tests: a very small model from the project's tiny builder (Qwen3 config, random init,
byte-level BPE trained on the project's corpus) and the shipped tiny tabular environment."""

from __future__ import annotations

from pathlib import Path

ENV_DIR = Path(__file__).resolve().parent / "data" / "envs" / "tiny-tabular"


def build_tiny(out_dir: Path, *, vocab_size: int = 1024, hidden: int = 64, layers: int = 2) -> Path:
    from engine.agents.policies.tiny import default_corpus
    from engine.models.tiny import build_tiny_model

    return Path(build_tiny_model(out_dir, corpus=default_corpus(), hidden=hidden, layers=layers, vocab_size=vocab_size))


def register_tiny_env(store, split: str = "train") -> str:
    from engine.agents.rollout import register_env
    from engine.envs.layout import EnvSpec

    env = EnvSpec.from_dir(ENV_DIR)
    register_env(store, env, split=split)
    return env.id
