"""The hf policy on a tiny model built here (random init + a tokenizer trained in seconds): a react episode runs end
to end, is stored, graded invalid and rewarded; tokens and log-probs are kept exactly, history never re-tokenized."""

from __future__ import annotations

import pytest

from engine.agents.policies import load_policy
from store.trajectories import Turn
from engine.agents.rollout import run_episode
from engine.envs.layout import EnvSpec

from conftest import DATA


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from engine.agents.tiny import default_corpus
    from engine.agents.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus=default_corpus(), hidden=64, layers=2, heads=2, kv_heads=1,
                            vocab_size=600)


def test_tiny_model_builds_and_reloads_unchanged(tiny):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from engine.models.loading import from_pretrained, pick_device

    model, tok = from_pretrained(tiny, device="cpu")
    assert type(model).__name__ == "Qwen3ForCausalLM" and model.config.model_type == "qwen3"
    again = AutoTokenizer.from_pretrained(tiny)
    text = "<|user|>\nimport pandas as pd<|end|>"
    assert again(text)["input_ids"] == tok(text)["input_ids"]
    assert tok.convert_ids_to_tokens(tok(text)["input_ids"])[0] == "<|user|>"
    assert tok.eos_token == "<|end|>" and tok.pad_token == "<|pad|>"
    assert AutoModelForCausalLM.from_pretrained(tiny).config.vocab_size == len(tok)
    assert pick_device() in ("cpu", "cuda")


def test_react_episode_with_a_tiny_hf_model_end_to_end(tiny, store):
    env = EnvSpec.from_dir(DATA / "envs" / "tiny-tabular")
    policy = load_policy(f"hf:{tiny},max_new_tokens=24,device=cpu")
    traj = run_episode(env, policy, scaffold="react", store=store, max_turns=3, rng_seed=7)
    assert traj.status == "done" and traj.truncated and not traj.terminated
    assert not traj.grade["valid_submission"] and traj.grade["error"] == "no submission.csv was produced"
    assert traj.reward == 0.0 and traj.reward_breakdown["terms"]["format"]["value"] == 0.0
    row = store.trajectories.get(traj.id)
    assert row.n_turns == len(traj.turns) == 2 + 3 * 2 and row.tokens == traj.tokens > 0
    tok = policy.tokenizer
    header = tok("<|assistant|>\n", add_special_tokens=False)["input_ids"]
    for t, stored in zip(traj.turns, row.turns):
        assert t.token_ids and stored.token_ids == t.token_ids
        if t.role == "assistant":
            assert len(t.logprobs) == len(t.token_ids) <= 24
            assert all(lp <= 0.0 for lp in t.logprobs)
            assert tok.decode(t.token_ids, skip_special_tokens=True) == t.text
        else:
            assert t.logprobs is None
    # the prompt (system + user) ends with the generation prompt; the last observation is rendered too
    assert traj.turns[1].token_ids[-len(header):] == header
    assert traj.turns[3].token_ids[0] == tok.convert_tokens_to_ids("<|tool|>")
    # the same seed gives the same episode
    again = run_episode(env, policy, scaffold="react", max_turns=3, rng_seed=7)
    assert [t.token_ids for t in again.turns] == [t.token_ids for t in traj.turns]


def test_history_is_never_retokenized(tiny):
    policy = load_policy(f"hf:{tiny},max_new_tokens=8,temperature=0.7,top_p=0.9")
    msgs = [Turn("system", "sys"), Turn("user", "task")]
    a = policy.act(msgs, rng_seed=1)
    sys_ids, user_ids = list(msgs[0].token_ids), list(msgs[1].token_ids)
    msgs.append(Turn("assistant", a.text, token_ids=a.token_ids, logprobs=a.logprobs))
    msgs.append(Turn("tool", "[exit 0 · ok]"))
    # poison the assistant text: a re-tokenizing policy would now see different tokens
    msgs[2].text = "SOMETHING ELSE ENTIRELY"
    b = policy.act(msgs, rng_seed=2)
    assert msgs[0].token_ids == sys_ids and msgs[1].token_ids == user_ids and msgs[2].token_ids == a.token_ids
    seen = policy.chat.sequence(msgs)
    assert seen[: len(sys_ids) + len(user_ids)] == sys_ids + user_ids
    assert len(b.token_ids) == len(b.logprobs) and all(lp <= 0 for lp in b.logprobs)
    # top-p sampling: every sampled token had non-zero probability under the truncated distribution
    assert all(lp > float("-inf") for lp in a.logprobs + b.logprobs)


def test_chat_template_models_render_each_message_once(tiny):
    from transformers import AutoTokenizer

    from engine.agents.policies.chat import ChatFormat

    tok = AutoTokenizer.from_pretrained(tiny)
    tok.chat_template = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>{% endfor %}"
                         "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
    fmt = ChatFormat(tok)
    assert fmt.template and fmt.header == tok("<|assistant|>\n", add_special_tokens=False)["input_ids"]
    msgs = [Turn("system", "be brief"), Turn("user", "hello there"), Turn("assistant", "hi"),
            Turn("tool", "obs")]
    fmt.fill(msgs)
    full = tok.apply_chat_template([{"role": m.role, "content": m.text} for m in msgs], tokenize=False)
    assert tok.decode(fmt.sequence(msgs)) == full


def test_hf_policy_with_a_peft_adapter(tiny, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    lora.save_pretrained(tmp_path / "adapter")
    policy = load_policy(f"hf:{tiny},adapter={tmp_path / 'adapter'},max_new_tokens=4")
    assert "adapter=" in policy.name and type(policy.model).__name__.startswith("PeftModel")
    act = policy.act([Turn("system", "s"), Turn("user", "u")], rng_seed=0)
    assert len(act.token_ids) == len(act.logprobs) >= 1
