"""Helpers of the training tests: a very small model from the project's tiny builder (Qwen3 config, random init,
byte-level BPE trained on the project's corpus) and the shipped tiny tabular environment."""

from __future__ import annotations

from pathlib import Path

ENV_DIR = Path(__file__).resolve().parent / "data" / "envs" / "tiny-tabular"


def build_tiny(out_dir: Path, *, vocab_size: int = 1024, hidden: int = 64, layers: int = 2) -> Path:
    from engine.agents.tiny import default_corpus
    from engine.agents.tiny import build_tiny_model

    return Path(build_tiny_model(out_dir, corpus=default_corpus(), hidden=hidden, layers=layers, vocab_size=vocab_size))


def register_tiny_env(store, split: str = "train") -> str:
    from engine.agents.rollout import register_env
    from engine.envs.layout import EnvSpec

    env = EnvSpec.from_dir(ENV_DIR)
    register_env(store, env, split=split)
    return env.id


def scripted_demos(store, n: int = 2) -> str:
    """A rollout run of ``n`` scripted (expert) react episodes on the tiny environment: SFT's data."""
    from engine.agents.policies import load_policy
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec

    register_tiny_env(store)
    run = store.runs.create("rollout", {"policy": "scripted"})
    env = EnvSpec.from_dir(ENV_DIR)
    for seed in range(n):
        run_episode(env, load_policy("scripted:skill=1"), scaffold="react", store=store, run_id=run, rng_seed=seed,
                    max_turns=6)
    return run
