"""The batched hf sampler on a tiny model built here: concurrent requests share batches, and each request gives the
same tokens (and log-probs, to float rounding) as when it runs alone with the same seed — greedy and sampled; its
log-probs are the trainer's own recomputation of the sampled tokens."""

from __future__ import annotations

import os
import threading

import pytest
import torch

from engine.inference import SampleRequest, StaleSampleError, check_fresh
from engine.inference.hf import HFSampler


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from engine.agents.tiny import default_corpus
    from engine.models.loading import from_pretrained
    from engine.agents.tiny import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus=default_corpus(), hidden=64,
                            layers=2, heads=2, kv_heads=1, vocab_size=600)
    return from_pretrained(path, device="cpu")


def _prompts(tok) -> list[list[int]]:
    texts = ["x" * 3, "import pandas as pd\n" * 2, "a longer prompt about a tabular task " * 3, "y", "z" * 9]
    return [tok(f"<|user|>\n{t}<|end|><|assistant|>\n", add_special_tokens=False)["input_ids"] for t in texts]


def _concurrently(sampler: HFSampler, requests: list[SampleRequest]):
    out = [None] * len(requests)

    def one(i: int) -> None:
        out[i] = sampler.generate([requests[i]])[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


@pytest.mark.parametrize("temperature,top_p", [(0.0, 1.0), (1.0, 1.0), (0.7, 0.9)])
def test_batched_gives_the_serial_tokens_for_the_same_seeds(tiny, temperature, top_p):
    model, tok = tiny
    requests = [SampleRequest(tuple(p), max_new_tokens=12 + 3 * i, temperature=temperature, top_p=top_p,
                              seed=100 + i) for i, p in enumerate(_prompts(tok))]
    serial = HFSampler(model, max_batch=1)
    batched = HFSampler(model, max_batch=8, wait_ms=200)
    try:
        alone = [serial.generate([r])[0] for r in requests]
        together = _concurrently(batched, requests)
    finally:
        serial.close()
        batched.close()
    assert serial.stats.batches == len(requests)
    assert batched.stats.batches < len(requests) and batched.stats.mean_batch > 1  # callers really shared batches
    for a, b, r in zip(alone, together, requests):
        assert a.token_ids == b.token_ids and len(a.token_ids) == r.max_new_tokens
        assert a.finish_reason == b.finish_reason == "length"
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
        assert all(lp <= 0 for lp in a.logprobs)
    if temperature > 0:  # different seeds give different samples
        assert len({tuple(s.token_ids) for s in together}) == len(requests)


def test_a_seed_repeats_and_another_seed_differs(tiny):
    model, tok = tiny
    prompt = tuple(_prompts(tok)[2])
    sampler = HFSampler(model)
    try:
        a, b, c = sampler.generate([SampleRequest(prompt, 16, seed=s) for s in (5, 5, 6)])
    finally:
        sampler.close()
    assert a.token_ids == b.token_ids and a.token_ids != c.token_ids


def test_greedy_matches_transformers_generate(tiny):
    model, tok = tiny
    prompt = _prompts(tok)[1]
    sampler = HFSampler(model)
    try:
        sample = sampler.generate([SampleRequest(tuple(prompt), 10, temperature=0.0)])[0]
    finally:
        sampler.close()
    ref = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                         max_new_tokens=10, do_sample=False, eos_token_id=None, pad_token_id=tok.pad_token_id)
    assert sample.token_ids == ref[0, len(prompt):].tolist()


def test_a_stop_token_ends_the_sample_and_is_kept(tiny):
    model, tok = tiny
    prompt = tuple(_prompts(tok)[0])
    sampler = HFSampler(model)
    try:
        free = sampler.generate([SampleRequest(prompt, 6, temperature=0.0)])[0]
        stop = free.token_ids[2]
        stopped, other = sampler.generate([SampleRequest(prompt, 6, temperature=0.0, stop_ids=(stop,)),
                                           SampleRequest(prompt, 6, temperature=0.0)])
    finally:
        sampler.close()
    first = free.token_ids.index(stop)
    assert stopped.token_ids == free.token_ids[: first + 1] and stopped.finish_reason == "stop"
    assert other.token_ids == free.token_ids and other.finish_reason == "length"


def test_sampled_logprobs_are_the_trainers_recomputation(tiny):
    from engine.rl.objective import sequence_logprobs

    model, tok = tiny
    temperature = 0.8
    requests = [SampleRequest(tuple(p), 14, temperature=temperature, seed=i) for i, p in enumerate(_prompts(tok))]
    sampler = HFSampler(model, max_batch=8, wait_ms=100)
    try:
        samples = _concurrently(sampler, requests)
    finally:
        sampler.close()
    for r, s in zip(requests, samples):
        ids = torch.tensor([list(r.prompt_ids) + s.token_ids])
        with torch.no_grad():
            lp = sequence_logprobs(model, ids, torch.ones_like(ids), temperature)[0, len(r.prompt_ids) - 1:]
        assert torch.allclose(lp, torch.tensor(s.logprobs), atol=1e-4)


def test_publish_waits_for_the_running_batch_and_tags_later_samples(tiny):
    model, tok = tiny
    sampler = HFSampler(model, version=3)
    prompt = tuple(_prompts(tok)[0])
    try:
        assert sampler.generate([SampleRequest(prompt, 2)])[0].version == 3
        sampler.sleep()
        got: list = []
        waiting = threading.Thread(target=lambda: got.append(sampler.generate([SampleRequest(prompt, 2)])[0]))
        waiting.start()
        waiting.join(timeout=0.3)
        assert waiting.is_alive() and not got  # asleep: no batch starts during the update
        sampler.publish(model, 4)
        sampler.wake_up()
        waiting.join(timeout=30)
    finally:
        sampler.close()
    assert got[0].version == 4


def test_check_fresh_refuses_stale_and_base_samples():
    check_fresh([4, 4], 4)
    check_fresh([3, 4], 4, max_staleness=1)
    with pytest.raises(StaleSampleError, match="version 3; expected 4"):
        check_fresh([4, 3], 4)
    with pytest.raises(StaleSampleError, match="base model"):
        check_fresh([None], 4)
    with pytest.raises(StaleSampleError):
        check_fresh([2], 4, max_staleness=1)


def test_bad_requests_are_refused_in_one_line():
    from engine.inference import SamplerError

    with pytest.raises(SamplerError, match="at least one prompt token"):
        SampleRequest((), 4)
    with pytest.raises(SamplerError, match="max_new_tokens"):
        SampleRequest((1, 2), 0)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_conversations_next_turn_prefills_only_its_new_tokens(tiny, temperature):
    model, tok = tiny
    prompts = [tuple(p) for p in _prompts(tok)[:3]]
    cached = HFSampler(model, max_batch=8, wait_ms=100)
    plain = HFSampler(model, max_batch=8, wait_ms=100, prefix_cache_tokens=0)
    try:
        first = [SampleRequest(p, 6 + i, temperature, seed=i) for i, p in enumerate(prompts)]
        done = cached.generate(first)
        assert [s.token_ids for s in done] == [s.token_ids for s in plain.generate(first)]
        # the next turn: each conversation + an observation of its own length; plus a conversation never seen
        obs = [tok(f"<|tool|>\n{'ok ' * (3 * i + 1)}<|end|><|assistant|>\n", add_special_tokens=False)["input_ids"]
               for i in range(3)]
        nxt = [SampleRequest(p + tuple(s.token_ids) + tuple(o), 7, temperature, seed=10 + i)
               for i, (p, s, o) in enumerate(zip(prompts, done, obs))]
        nxt.append(SampleRequest(tuple(_prompts(tok)[4]), 7, temperature, seed=99))
        before = cached.stats.snapshot()
        again, ref = cached.generate(nxt), plain.generate(nxt)
        for a, b in zip(again, ref):
            assert a.token_ids == b.token_ids
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
        reused = sum(len(p) + len(s.token_ids) - 1 for p, s in zip(prompts, done))
        assert cached.stats.cached_tokens - before.cached_tokens == reused and plain.stats.cached_tokens == 0
        assert cached.stats.prefill_tokens - before.prefill_tokens == sum(len(r.prompt_ids) for r in nxt) - reused
        cached.publish(model, 1)  # new weights: the cached KV is stale
        assert not cached.prefix.entries
    finally:
        cached.close()
        plain.close()


def test_a_groups_common_prompt_is_read_once(tiny):
    model, tok = tiny
    prompt = tuple(_prompts(tok)[2])
    group = [SampleRequest(prompt, 6, 1.0, seed=s) for s in range(4)]  # a GRPO group: one task, four seeds
    cached = HFSampler(model)
    plain = HFSampler(model, prefix_cache_tokens=0)
    try:
        got, ref = cached.generate(group), plain.generate(group)
    finally:
        cached.close()
        plain.close()
    assert [s.token_ids for s in got] == [s.token_ids for s in ref] and len({tuple(s.token_ids) for s in got}) > 1
    assert cached.stats.prefill_tokens == len(prompt) + 3 and cached.stats.cached_tokens == 3 * (len(prompt) - 1)
    assert plain.stats.prefill_tokens == 4 * len(prompt)


def test_the_prefix_cache_keeps_to_its_token_budget():
    from engine.inference.hf import PrefixCache

    cache = PrefixCache(10)
    cache.put((1, 2, 3), ["a"])
    cache.put((4, 5, 6, 7), ["b"])
    assert cache.find((1, 2, 3, 9)) == (3, ["a"])  # used: now the most recent
    cache.put((8, 9, 10), ["c"])  # 10 tokens: still fits
    cache.put((8, 9, 10), ["c2"])  # the same key again replaces, not adds
    assert cache.tokens == 10 and cache.find((8, 9, 10, 1)) == (3, ["c2"])
    cache.put((11, 12), ["d"])  # 12 tokens > 10: the least recently used goes
    assert list(cache.entries) == [(1, 2, 3), (8, 9, 10), (11, 12)] and cache.tokens == 8
    assert cache.find((4, 5, 6, 7, 1)) == (0, None)
    assert cache.find((1, 2, 3)) == (0, None)  # not a proper prefix: nothing new to run
    cache.put(tuple(range(11)), ["too long"])  # longer than the whole budget: not kept
    assert cache.tokens == 8


def test_rows_sharing_a_prompt_prefix_decode_on_one_copy_of_it(tiny):
    """A GRPO group's rollouts share their task prompt: batched, they decode on one copy of its KV (each row reads
    only its own suffix) and give the serial tokens; rows leaving early and the next turns' prefix cache agree."""
    model, tok = tiny

    def ids(text: str) -> list[int]:
        return tok(text, add_special_tokens=False)["input_ids"]

    task = ids("<|user|>\n" + "fit a model on the tabular data and print the validation score. " * 3)
    tails = ["x<|end|><|assistant|>\n", "import pandas as pd<|end|><|assistant|>\n", "yy " * 5, "", ""]
    prompts = [tuple(task + ids(t)) for t in tails] + [tuple(_prompts(tok)[2])]
    requests = [SampleRequest(p, 5 + 3 * i, temperature=1.0, seed=i) for i, p in enumerate(prompts)]
    shared = len(os.path.commonprefix([list(p) for p in prompts[:5]]))
    assert shared >= len(task) > 16
    serial = HFSampler(model, max_batch=1)
    batched = HFSampler(model, max_batch=8, wait_ms=200, share_min_tokens=16)
    try:
        alone = [serial.generate([r])[0] for r in requests]
        together = batched.generate(requests)
        assert batched.stats.batches == 1 and batched.stats.shared_tokens == 4 * shared  # 5 rows, one copy
        assert serial.stats.shared_tokens == 0
        for a, b, r in zip(alone, together, requests):
            assert a.token_ids == b.token_ids and len(b.token_ids) == r.max_new_tokens  # rows left one by one
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4
        # the next turns: each conversation's whole KV (shared prefix + its own columns) was kept
        nxt = [SampleRequest(r.prompt_ids + tuple(s.token_ids) + tuple(ids("<|tool|>\nok<|end|>")), 4, 1.0, seed=9)
               for r, s in zip(requests, together)]
        before = batched.stats.snapshot()
        again = batched.generate(nxt)
        assert batched.stats.cached_tokens - before.cached_tokens == sum(
            len(r.prompt_ids) + len(s.token_ids) - 1 for r, s in zip(requests, together))
        assert [s.token_ids for s in again] == [serial.generate([r])[0].token_ids for r in nxt]
    finally:
        serial.close()
        batched.close()
    assert model.config._attn_implementation == "sandmle_shared_prefix"  # sdpa for every other call


def test_a_sliding_window_model_decodes_without_sharing(tmp_path):
    from transformers import AutoModelForCausalLM, Qwen3Config

    config = Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, use_sliding_window=True,
                         sliding_window=8, max_window_layers=0)
    model = AutoModelForCausalLM.from_config(config).eval()
    prompt = tuple(range(3, 40))
    sampler = HFSampler(model, share_min_tokens=4)
    try:
        samples = sampler.generate([SampleRequest(prompt, 3, 1.0, seed=s) for s in range(2)])
    finally:
        sampler.close()
    assert [len(s.token_ids) for s in samples] == [3, 3] and sampler.stats.shared_tokens == 0
    assert model.config._attn_implementation == "sdpa"
