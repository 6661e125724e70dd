"""The collapse watch: it warns once when the smoothed training reward halves from its best while KL or the clip
fraction spikes, and not on noise, on a reward fall alone, or on a spike alone."""

from __future__ import annotations

from engine.rl.health import CollapseWatch


def feed(watch: CollapseWatch, steps: list[tuple[float, float, float]]) -> list[tuple[int, str]]:
    out = []
    for i, (reward, kl, clip) in enumerate(steps, start=1):
        msg = watch.update(i, {"reward_mean": reward, "kl": kl, "clip_fraction": clip})
        if msg:
            out.append((i, msg))
    return out


HEALTHY = [(0.4, 0.001, 0.0), (0.5, 0.002, 0.0), (0.6, 0.002, 0.0), (0.6, 0.003, 0.0)]


def test_collapse_with_a_kl_spike_warns_once():
    steps = HEALTHY + [(0.3, 0.05, 0.0), (0.1, 0.09, 0.0), (0.05, 0.08, 0.0), (0.05, 0.1, 0.0)]
    warnings = feed(CollapseWatch(), steps)
    assert [s for s, _ in warnings] == [7]
    msg = warnings[0][1]
    assert "step 7" in msg and "best 0.567 at step 4" in msg and "kl 0.05" in msg


def test_clip_fraction_spike_counts_too():
    steps = HEALTHY + [(0.2, 0.003, 0.3), (0.1, 0.003, 0.02), (0.05, 0.003, 0.01)]
    warnings = feed(CollapseWatch(), steps)
    assert len(warnings) == 1 and "clip_fraction 0.3" in warnings[0][1]


def test_no_warning_for_a_fall_without_a_spike_or_a_spike_without_a_fall():
    fall_only = HEALTHY + [(0.1, 0.003, 0.0), (0.05, 0.003, 0.0), (0.0, 0.003, 0.0)]
    assert feed(CollapseWatch(), fall_only) == []
    spike_only = HEALTHY + [(0.6, 0.2, 0.3), (0.55, 0.3, 0.3), (0.6, 0.3, 0.3)]
    assert feed(CollapseWatch(), spike_only) == []


def test_rewarns_after_a_recovery():
    down = [(0.1, 0.09, 0.0), (0.05, 0.1, 0.0), (0.05, 0.1, 0.0)]
    up = [(0.6, 0.01, 0.0), (0.6, 0.01, 0.0), (0.6, 0.01, 0.0)]
    down2 = [(0.05, 0.5, 0.0), (0.05, 0.5, 0.0), (0.0, 0.6, 0.0)]
    warnings = feed(CollapseWatch(), HEALTHY + down + up + down2)
    assert len(warnings) == 2


def test_a_run_that_never_earned_reward_is_not_called_collapsed():
    steps = [(0.05, 0.001, 0.0), (0.06, 0.001, 0.0), (0.05, 0.001, 0.0), (0.0, 0.5, 0.5), (0.0, 0.5, 0.5)]
    assert feed(CollapseWatch(), steps) == []
