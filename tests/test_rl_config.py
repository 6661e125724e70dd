"""Config dataclasses: help on every field, validation in __post_init__, TOML + flags, unknown keys named."""

from __future__ import annotations

from dataclasses import fields

import pytest

from engine.config import SandboxSettings
from engine.errors import ConfigError
from engine.rl.config import GRPOConfig, SFTConfig, config_from_dict, load_config, to_dict
from engine.agents.tiny.recipe import TINY_GRPO
from engine.rl.curriculum import Curriculum


@pytest.mark.parametrize("cls", [GRPOConfig, SFTConfig])
def test_every_field_has_help(cls):
    for f in fields(cls):
        assert f.metadata.get("help"), f"{cls.__name__}.{f.name} has no help text"


def test_defaults_follow_the_paper():
    c = GRPOConfig()
    assert (c.group_size, c.clip_low, c.clip_high, c.kl_coef, c.temperature, c.max_turns) == (4, 0.2, 0.28, 0.0, 1.0, 15)
    # 300 s per code step: the sandbox's own limit unless the config names another
    assert (c.step_timeout_s, SandboxSettings().timeout_s, c.episode_timeout_s, c.scaffold) == \
        (None, 300.0, 1200.0, "react")


@pytest.mark.parametrize("kw, msg", [
    ({"group_size": 1}, "group_size"), ({"clip_low": 1.5}, "clip_low"), ({"kl_coef": -1}, "kl_coef"),
    ({"equal_group": "drop"}, "equal_group"), ({"lr": 0}, "lr"), ({"scaffold": "chat"}, "scaffold"),
    ({"temperature": 0}, "temperature"), ({"steps": 0}, "steps"), ({"step_timeout_s": 0}, "step_timeout_s"),
])
def test_bad_grpo_values_are_rejected(kw, msg):
    with pytest.raises(ValueError, match=msg):
        GRPOConfig(**kw)


def test_where_code_runs_is_the_settings_not_the_training_config(tmp_path):
    """[sandbox] and [executor] own the sandbox backend, its limits and the executor: GRPOConfig has none of them
    (a config file naming one is told so), and the settings validate them against their registries."""
    from engine.config import ExecutorSettings

    names = {f.name for f in fields(GRPOConfig)}
    assert not names & {"executor", "address", "sandbox_backend", "memory_mb", "max_procs"}
    f = tmp_path / "grpo.toml"
    f.write_text('[grpo]\nsandbox_backend = "docker"\n')
    with pytest.raises(ConfigError, match="unknown key 'sandbox_backend'"):
        load_config(GRPOConfig, f)
    with pytest.raises(ConfigError, match="unknown sandbox backend 'k8s'; expected local, docker"):
        SandboxSettings().override(backend="k8s")
    with pytest.raises(ConfigError, match="memory_mb"):
        SandboxSettings().override(memory_mb=512)
    with pytest.raises(ConfigError, match="unknown executor 'slurm'"):
        ExecutorSettings().override(kind="slurm")


def test_toml_then_flags(tmp_path):
    f = tmp_path / "grpo.toml"
    f.write_text('[grpo]\nsteps = 7\ngroup_size = 8\nclip_high = 0.3\nenv_ids = ["a", "b"]\n')
    c = load_config(GRPOConfig, f, {"steps": 9, "lr": None})
    # lr=None means "not given": the model's default (tiny's recipe, as the file names no model)
    assert (c.steps, c.group_size, c.clip_high, c.env_ids, c.lr) == (9, 8, 0.3, ["a", "b"], TINY_GRPO["lr"])
    flat = tmp_path / "flat.toml"
    flat.write_text("epochs = 2.0\nmin_reward = 0.7\n")
    s = load_config(SFTConfig, flat)
    assert (s.epochs, s.min_reward) == (2.0, 0.7)


def test_unknown_key_and_bad_value_name_the_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("stepz = 3\n")
    with pytest.raises(ConfigError, match=r"bad.toml.*stepz"):
        load_config(GRPOConfig, f)
    f.write_text("group_size = 1\n")
    with pytest.raises(ConfigError, match=r"bad.toml.*group_size"):
        load_config(GRPOConfig, f)
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(GRPOConfig, tmp_path / "missing.toml")


def test_stored_config_round_trips():
    c = GRPOConfig(steps=3, env_ids=["x"])
    d = to_dict(c) | {"from_the_future": 1}
    assert config_from_dict(GRPOConfig, d) == c


def test_curriculum_prefers_environments_with_reward_spread():
    import random

    cur = Curriculum(["flat", "spread", "new"], window=2, floor=0.05)
    cur.update("flat", [0.2, 0.2, 0.2, 0.2])
    cur.update("spread", [0.0, 1.0, 0.0, 1.0])
    w = cur.weights()
    assert w["flat"] == 0.05 and w["spread"] == 1.0 and w["new"] == 1.0
    rng = random.Random(0)
    picks = [cur.sample(1, rng)[0] for _ in range(400)]
    assert picks.count("flat") < 30 and picks.count("spread") > 150
    # without replacement inside one step while possible
    assert sorted(cur.sample(3, rng)) == ["flat", "new", "spread"]
    again = Curriculum.from_state(cur.state_dict())
    assert again.weights() == w
