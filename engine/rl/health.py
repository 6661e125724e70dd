"""Watching a GRPO run for collapse: the training reward falls to half of its best while the policy's KL to the policy
the run started from or the clip fraction spikes — the signature of updates that moved the adapter off what it had learned (a
too-high learning rate, garbled samples at a high temperature, or a sampler that drifted from the trainer)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class CollapseWatch:
    """Feed it each step's metrics; it returns a warning the first step a collapse shows, then stays quiet until
    the reward recovers. Rewards are smoothed over ``window`` steps (single steps are noisy: a few episodes), and a
    spike counts if it happened within those steps."""

    window: int = 3
    drop: float = 0.5           #: warn when the smoothed reward is at most this share of its best
    min_best: float = 0.1       #: ignore runs that never earned a reward worth losing
    spike: float = 3.0          #: a spike: a value at least this many times its median over the earlier steps
    floors: dict[str, float] = field(default_factory=lambda: {"kl": 0.02, "clip_fraction": 0.05})
    rewards: list[float] = field(default_factory=list)
    history: dict[str, list[float]] = field(default_factory=dict)
    spikes: list[list[str]] = field(default_factory=list)  #: per step: the spikes seen that step
    best: float = 0.0
    best_step: int = 0
    warned: bool = False

    def _spikes(self, metrics: dict[str, float]) -> list[str]:
        found = []
        for name, floor in self.floors.items():
            value = metrics.get(name)
            earlier = self.history.get(name, [])
            if value is None or len(earlier) < 2:
                continue
            base = statistics.median(earlier)
            if value >= floor and value >= self.spike * max(base, 1e-9):
                found.append(f"{name} {value:.3g} ({value / max(base, 1e-9):.0f}x its median {base:.3g})"
                             if base > 0 else f"{name} {value:.3g} (from 0)")
        return found

    def update(self, step: int, metrics: dict[str, float]) -> str | None:
        self.rewards.append(float(metrics["reward_mean"]))
        recent = self.rewards[-self.window:]
        smooth = sum(recent) / len(recent)
        self.spikes.append(self._spikes(metrics))
        for name in self.floors:
            if metrics.get(name) is not None:
                self.history.setdefault(name, []).append(float(metrics[name]))
        if len(recent) == self.window and smooth > self.best:
            self.best, self.best_step = smooth, step
        fallen = self.best >= self.min_best and smooth <= self.drop * self.best
        if not fallen:
            self.warned = False
            return None
        spikes = [s for seen in self.spikes[-self.window:] for s in seen]
        if self.warned or not spikes:
            return None
        self.warned = True
        return (f"possible collapse at step {step}: training reward {smooth:.3f} (mean of the last {len(recent)} "
                f"steps) is down from its best {self.best:.3f} at step {self.best_step}, and "
                + ", ".join(spikes) + "; consider a lower lr, a lower temperature or kl_coef > 0, and resuming "
                "from an earlier checkpoint")
