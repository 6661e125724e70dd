"""The GRPO arithmetic on hand-built numbers: advantages, masks, clipping, token mean, KL."""

from __future__ import annotations

import math

import pytest
import torch

from engine.rl.objective import build_sequence, collate, group_advantages, grpo_loss, tis_weights
from store.trajectories import Turn


def test_group_advantages_normalize_within_each_group():
    st = group_advantages([1.0, 0.0, 0.5, 0.5, 0.2, 0.8], ["a", "a", "a", "a", "b", "b"])
    a = st.advantages
    # group a: mean 0.5, sample std sqrt(1/6)
    std = math.sqrt((0.25 + 0.25) / 3)
    assert a[0] == pytest.approx(0.5 / std, rel=1e-4)
    assert a[1] == pytest.approx(-0.5 / std, rel=1e-4)
    assert a[2] == pytest.approx(0.0, abs=1e-6)
    assert sum(a[:4]) == pytest.approx(0.0, abs=1e-6)
    assert a[4] == pytest.approx(-a[5])
    assert st.weights == [1.0] * 6 and st.equal_groups == 0 and st.groups == 2


def test_unscaled_advantages_are_plain_differences():
    st = group_advantages([1.0, 0.0], ["g", "g"], scale=False)
    assert st.advantages == [0.5, -0.5]


def test_equal_groups_are_skipped_or_downweighted_and_counted():
    skip = group_advantages([0.2, 0.2, 0.9, 0.1], ["a", "a", "b", "b"])
    assert skip.equal_groups == 1 and skip.weights[:2] == [0.0, 0.0] and skip.weights[2:] == [1.0, 1.0]
    down = group_advantages([0.2, 0.2, 0.9, 0.1], ["a", "a", "b", "b"], equal_group="downweight", equal_weight=0.1)
    assert down.equal_groups == 1 and down.weights[:2] == [0.1, 0.1] and down.advantages[:2] == [0.0, 0.0]


def test_timed_out_episodes_are_masked_not_punished():
    # the timed-out one has reward 0 but must not pull the others' baseline down nor get a negative advantage
    st = group_advantages([0.0, 1.0, 0.5, 0.0], ["g"] * 4, masked=[True, False, False, False])
    assert st.weights[0] == 0.0 and st.advantages[0] == 0.0 and st.masked == 1
    live = group_advantages([1.0, 0.5, 0.0], ["g"] * 3)
    assert st.advantages[1:] == pytest.approx(live.advantages)
    # a group left with one live member has no baseline: no signal
    lone = group_advantages([0.0, 1.0], ["g", "g"], masked=[True, False])
    assert lone.weights == [0.0, 0.0] and lone.equal_groups == 1


def _turn(role, ids, lps=None):
    return Turn(role, "", token_ids=ids, logprobs=lps)


def test_build_sequence_masks_observations():
    turns = [_turn("system", [1, 2]), _turn("user", [3]), _turn("assistant", [10, 11], [-0.1, -0.2]),
             _turn("tool", [20, 21, 22]), _turn("assistant", [12], [-0.3])]
    s = build_sequence(turns)
    assert s.prompt_ids == [1, 2, 3]
    assert s.completion_ids == [10, 11, 20, 21, 22, 12]
    assert s.env_mask == [1, 1, 0, 0, 0, 1]
    assert s.old_logprobs[:2] == [-0.1, -0.2] and s.old_logprobs[-1] == -0.3
    assert s.model_tokens == 3


def test_build_sequence_refuses_text_only_turns():
    with pytest.raises(ValueError, match="token_ids"):
        build_sequence([Turn("user", "text only")])


def test_collate_lines_masks_up_with_next_token_positions():
    s = build_sequence([_turn("user", [1, 2]), _turn("assistant", [5, 6], [-1.0, -2.0]), _turn("tool", [7]),
                        _turn("assistant", [8], [-3.0])])
    b = collate([s], [1.0], [1.0])
    # logprob position t scores token t+1: tokens 5,6 sit at 2,3 → positions 1,2; the tool token 7 at 4 → 3; 8 → 4
    assert b.loss_mask.tolist() == [[0.0, 1.0, 1.0, 0.0, 1.0]]
    assert b.old_logprobs[0, 1:3].tolist() == [-1.0, -2.0] and b.old_logprobs[0, 4].item() == -3.0


def test_observation_tokens_get_zero_loss_weight_and_zero_gradient():
    torch.manual_seed(0)
    new = torch.randn(1, 6, requires_grad=True)
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0, 0.0, 1.0]])
    loss, st = grpo_loss(new, torch.full((1, 6), math.nan), torch.tensor([1.5]), mask)
    loss.backward()
    assert st.tokens == 3
    assert new.grad[0, [0, 3, 4]].abs().sum().item() == 0.0
    assert (new.grad[0, [1, 2, 5]].abs() > 0).all()
    # on-policy (ratio 1): gradient of -A * logp / n_tokens
    assert new.grad[0, 1].item() == pytest.approx(-1.5 / 3, rel=1e-5)


def test_clip_higher_is_asymmetric():
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    # ratio 1.25: inside the upper clip (1.28) → gradient flows for A > 0
    new = torch.full((1, 2), math.log(1.25), requires_grad=True)
    loss, st = grpo_loss(new, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.28)
    loss.backward()
    assert st.clip_fraction == 0.0 and new.grad.abs().sum() > 0
    # ratio 1.3: beyond it → clipped, no gradient
    new2 = torch.full((1, 2), math.log(1.3), requires_grad=True)
    loss2, st2 = grpo_loss(new2, old, torch.tensor([1.0]), mask, clip_low=0.2, clip_high=0.28)
    loss2.backward()
    assert st2.clip_fraction == 1.0 and new2.grad.abs().sum() == 0
    assert loss2.item() == pytest.approx(-1.28, rel=1e-5)
    # ratio 0.75 with A < 0: below 1 - 0.2 → clipped
    new3 = torch.full((1, 2), math.log(0.75), requires_grad=True)
    loss3, st3 = grpo_loss(new3, old, torch.tensor([-1.0]), mask)
    assert st3.clip_fraction == 1.0 and loss3.item() == pytest.approx(0.8, rel=1e-5)


def test_token_mean_weights_long_trajectories_by_their_tokens():
    new = torch.zeros(2, 4, requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    loss, st = grpo_loss(new, torch.zeros(2, 4), torch.tensor([1.0, -1.0]), mask)
    # token mean over 5 tokens: (4·(-1) + 1·(+1)) / 5
    assert loss.item() == pytest.approx(-3 / 5)
    # a normalizer of the whole batch makes micro-batches add up to the same mean
    l1, _ = grpo_loss(new[:1], torch.zeros(1, 4), torch.tensor([1.0]), mask[:1], normalizer=5)
    l2, _ = grpo_loss(new[1:], torch.zeros(1, 4), torch.tensor([-1.0]), mask[1:], normalizer=5)
    assert (l1 + l2).item() == pytest.approx(loss.item())
    # trajectory weights: a weight-0 trajectory contributes nothing
    lw, _ = grpo_loss(new, torch.zeros(2, 4), torch.tensor([1.0, -1.0]), mask, weights=torch.tensor([1.0, 0.0]))
    assert lw.item() == pytest.approx(-1.0)


def test_kl_is_zero_at_the_reference_and_positive_away_from_it():
    new = torch.tensor([[-1.0, -2.0]])
    mask = torch.ones(1, 2)
    _, same = grpo_loss(new, new.clone(), torch.tensor([0.0]), mask, ref_logprobs=new.clone(), kl_coef=0.1)
    assert same.kl == pytest.approx(0.0, abs=1e-7)
    loss, far = grpo_loss(new, new.clone(), torch.tensor([0.0]), mask, ref_logprobs=new - 1.0, kl_coef=0.1)
    k3 = math.exp(-1) + 1 - 1  # exp(d) - d - 1 with d = -1
    assert far.kl == pytest.approx(k3, rel=1e-5)
    assert loss.item() == pytest.approx(0.1 * k3, rel=1e-5)


def test_truncated_importance_weights_and_the_measured_mismatch():
    trainer = torch.tensor([[-1.0, -2.0, -0.5, -3.0, -1.0]])
    sampler = torch.tensor([[-1.0, -2.5, -2.0, math.nan, -9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])  # the last position is an observation
    mm = tis_weights(trainer, sampler, mask, cap=2.0)
    # ρ = π_trainer / π_sampler: 1, e^0.5, e^1.5 → capped at 2; unknown sampler log-prob and masked tokens: 1
    assert mm.weights.tolist()[0] == pytest.approx([1.0, math.exp(0.5), 2.0, 1.0, 1.0])
    assert mm.tokens == 3 and mm.capped == 1
    assert mm.abs_diff == pytest.approx(0.0 + 0.5 + 1.5)
    k3 = lambda d: math.exp(d) - 1 - d  # noqa: E731 - KL(sampler ‖ trainer) estimated from sampler draws
    assert mm.kl == pytest.approx(k3(0.0) + k3(0.5) + k3(1.5))
    off = tis_weights(trainer, sampler, mask, cap=0.0)
    assert torch.equal(off.weights, torch.ones_like(trainer)) and off.abs_diff == mm.abs_diff and off.capped == 0


def test_importance_weights_scale_each_tokens_gradient():
    new = torch.zeros(1, 2, requires_grad=True)
    mask = torch.ones(1, 2)
    loss, _ = grpo_loss(new, torch.zeros(1, 2), torch.tensor([1.0]), mask, is_weights=torch.tensor([[0.5, 2.0]]))
    loss.backward()
    # on-policy ratio 1: d/dnew of -w·A·ρ / n = -w·A / 2
    assert new.grad[0].tolist() == pytest.approx([-0.25, -1.0])
