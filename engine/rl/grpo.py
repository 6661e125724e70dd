"""Trajectory-wise GRPO, a compact loop on torch + PEFT (see README "Training" for why not TRL's GRPOTrainer).

Per step: pick environments (curriculum), run G rollouts each in the scaffold with the current policy (episodes
stored as they finish), turn each trajectory into its exact token sequence (observations masked), compute
group-normalized advantages (timed-out episodes masked, all-equal groups skipped or down-weighted), one clipped
token-mean update of the LoRA adapter, metrics to the store, and a checkpoint every K steps. Resuming restores the
adapter, optimizer, RNG and curriculum from the last checkpoint and takes back the rollouts already stored for the
steps after it, so no step is counted twice and no stored rollout is lost or sampled again."""

from __future__ import annotations

import random
import signal
import statistics
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch

from store.runs import new_id

from ..agents.policies.hf import HFPolicy
from ..agents.rollout import run_episode
from ..config import load_settings
from ..envs.layout import REAL_SPLIT, EnvSpec
from ..errors import TrainingError
from ..inference import Sampler, make_sampler
from ..models.adapters import resolve_adapter
from ..sandbox import SandboxBackend, get_backend
from .checkpoint import load_adapter_weights, load_state, save_checkpoint, set_rng_state, verify
from .config import GRPOConfig, config_from_dict
from .curriculum import Curriculum
from .health import CollapseWatch
from .modeling import load_for_training, resolve_model
from .objective import TokenSequence, build_sequence, group_advantages
from .rollouts import Rollout, collect, fresh, stored_plan
from .update import grpo_update, make_optimizer

PolicyFactory = Callable[[Any, Any, GRPOConfig, Any], Any]
EpisodeFn = Callable[..., Any]


def default_policy_factory(model: Any, tokenizer: Any, cfg: GRPOConfig, sampler: Sampler) -> Any:
    """The agents' hf policy around the live (training) model: it renders messages into tokens once, samples
    through the trainer's sampler and records exact tokens, log-probs and the policy version."""
    return HFPolicy.from_loaded(model, tokenizer, sampler, temperature=cfg.temperature, top_p=cfg.top_p,
                                max_new_tokens=cfg.max_new_tokens)


def select_envs(store, cfg: GRPOConfig) -> list[str]:
    if cfg.env_ids:
        for e in cfg.env_ids:
            if store.envs.get(e)["split"] == REAL_SPLIT:
                raise TrainingError(f"environment {e} is a real competition (split 'real'): evaluation only")
        return list(cfg.env_ids)
    if cfg.env_split == "all":  # every split but the real competitions
        rows = store.envs.list(status="verified", exclude_split=REAL_SPLIT)
    else:
        rows = store.envs.list(status="verified", split=cfg.env_split)
    if not rows:
        raise TrainingError(f"no verified environments in split {cfg.env_split!r}",
                            hint="synthesize some first: sandmle envs synthesize")
    return [r["id"] for r in rows]


class GRPOTrainer:
    def __init__(self, store, cfg: GRPOConfig, *, run_id: str | None = None, parent_id: str | None = None,
                 policy_factory: PolicyFactory | None = None, episode_fn: EpisodeFn | None = None,
                 on_step: Callable[[int, dict], None] | None = None, on_rollout: Callable[[Rollout], None] | None = None):
        self.store, self.cfg = store, cfg
        self.policy_factory = policy_factory or default_policy_factory
        self.episode_fn: EpisodeFn = episode_fn or run_episode
        self.on_step, self.on_rollout = on_step, on_rollout
        self.env_ids = select_envs(store, cfg)
        #: where rollout code runs: the settings' [sandbox] with the config's overrides
        self.sandbox = load_settings().sandbox.override(backend=cfg.sandbox_backend, memory_mb=cfg.memory_mb,
                                                         max_procs=cfg.max_procs)
        # one backend per rollout worker thread (rollout_0, rollout_1, ...: the same names every step), kept warm
        # between episodes; the first is built here: a backend that cannot start fails before the run is stored
        self._lock = threading.Lock()
        self._backends: dict[str, SandboxBackend] = {"rollout_0": get_backend(store=store, settings=self.sandbox)}
        if run_id is None:
            run_id = new_id("grpo")
            self.run_dir = store.data_dir / "runs" / run_id
            store.runs.create("grpo", asdict(cfg), name=cfg.name, parent_id=parent_id, dir=str(self.run_dir),
                              run_id=run_id)
        else:
            row = store.runs.get(run_id)
            self.run_dir = Path(row["dir"]) if row.get("dir") else store.data_dir / "runs" / run_id
        self.run_id = run_id
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._stop = threading.Event()
        # set by setup(): the policy with its LoRA adapter, its tokenizer, the optimizer, the sampler it publishes to
        self.model: Any = None
        self.tokenizer: Any = None
        self.optimizer: Any = None
        self.sampler: Any = None
        self.start_step = 1
        self.watch = CollapseWatch()
        self.warnings: list[str] = []
        self.on_warning: Callable[[str], None] | None = None
        self.interrupted = False  #: ended by Ctrl-C (KeyboardInterrupt), not by a stop request

    # ------------------------------------------------------------------ construction / resume
    @classmethod
    def resume(cls, store, run_id: str, **kw: Any) -> "GRPOTrainer":
        row = store.runs.get(run_id)
        if row["kind"] != "grpo":
            raise TrainingError(f"run {row['id']} is a {row['kind']} run; only grpo runs resume here")
        if row["status"] == "done":
            raise TrainingError(f"run {row['id']} already finished")
        cfg = config_from_dict(GRPOConfig, row["config"])
        return cls(store, cfg, run_id=row["id"], **kw)

    def setup(self) -> None:
        cfg = self.cfg
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        model_path = resolve_model(cfg.model, self.store)
        adapter = resolve_adapter(cfg.adapter, self.store) if cfg.adapter else None
        self.model, self.tokenizer, self.device = load_for_training(
            model_path, adapter=adapter, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout, modules_to_save=cfg.lora_modules_to_save, device=cfg.device,
            gradient_checkpointing=cfg.gradient_checkpointing)
        self.optimizer = make_optimizer(self.model, cfg.lr, cfg.weight_decay)
        self.curriculum = Curriculum(self.env_ids, window=cfg.curriculum_window, floor=cfg.curriculum_floor,
                                     enabled=cfg.curriculum)
        self.rng = random.Random(cfg.seed)
        ckpt = self.store.runs.latest_checkpoint(self.run_id)
        if ckpt is not None:
            if not verify(ckpt):
                raise TrainingError(f"checkpoint {ckpt['path']} does not match its recorded hash")
            load_adapter_weights(self.model, ckpt["path"])
            state = load_state(ckpt["path"])
            if "optimizer" in state:
                self.optimizer.load_state_dict(state["optimizer"])
            set_rng_state(state["rng"])
            extra = state.get("extra", {})
            if "curriculum" in extra:
                self.curriculum = Curriculum.from_state(extra["curriculum"])
            if "sampler_rng" in extra:
                self.rng.setstate(extra["sampler_rng"])
            self.start_step = int(state["step"]) + 1
            for step, values in self._logged_steps():
                if (warning := self.watch.update(step, values)) is not None:
                    self.warnings.append(warning)
        self.sampler = make_sampler(cfg.sampler, self.model, model_path=model_path,
                                    work_dir=self.run_dir / "sampler", url=cfg.sampler_url,
                                    max_batch=cfg.sampler_batch, prefix_cache_tokens=cfg.sampler_prefix_cache,
                                    lora_rank=cfg.lora_r, seed=cfg.seed)
        self.sampler.publish(self.model, self.start_step - 1)  # version = GRPO updates behind the weights
        self.policy = self.policy_factory(self.model, self.tokenizer, cfg, self.sampler)

    # ------------------------------------------------------------------ one step
    def rollout_backend(self) -> SandboxBackend:
        """The calling rollout worker's sandbox backend (built from :attr:`sandbox` on its first episode)."""
        name = threading.current_thread().name
        with self._lock:
            if name not in self._backends:
                self._backends[name] = get_backend(store=self.store, settings=self.sandbox)
            return self._backends[name]

    def _run_one(self, env_id: str, group_id: str, rng_seed: int, step: int) -> Any:
        cfg = self.cfg
        return self.episode_fn(
            EnvSpec.from_store(self.store, env_id), self.policy, scaffold=cfg.scaffold, store=self.store,
            sandbox=self.rollout_backend(),
            run_id=self.run_id, group_id=group_id, step=step, rng_seed=rng_seed, max_turns=cfg.max_turns,
            step_timeout_s=cfg.step_timeout_s, episode_timeout_s=cfg.episode_timeout_s, reward=cfg.reward)

    def _logged_steps(self) -> list[tuple[int, dict[str, float]]]:
        """(step, metrics) of the steps already logged (a resumed run's collapse watch starts from them)."""
        by_step: dict[int, dict[str, float]] = {}
        for name, points in self.store.runs.metrics(self.run_id).items():
            for step, value in points:
                if step < self.start_step:
                    by_step.setdefault(step, {})[name] = value
        return [(k, v) for k, v in sorted(by_step.items()) if "reward_mean" in v]

    def policy_name(self, step: int) -> str:
        """What step ``step``'s rollouts sample from: the model plus the adapter after ``step - 1`` updates (the
        starting adapter before the first), named so that it loads again (``adapter=RUN_ID@STEP``)."""
        name = f"hf:{self.cfg.model}"
        if step > 1:
            return f"{name},adapter={self.run_id}@{step - 1}"
        return name + (f",adapter={self.cfg.adapter}" if self.cfg.adapter else "")

    def plan(self, step: int) -> list[str]:
        """The step's environments: those of groups already stored for it (resume), the rest from the curriculum."""
        have = stored_plan(self.store, self.run_id, step)
        fresh = self.curriculum.sample(self.cfg.envs_per_step, self.rng)
        return [have.get(k, fresh[k]) for k in range(self.cfg.envs_per_step)]

    def step(self, step: int) -> dict[str, float]:
        cfg = self.cfg
        t0 = time.perf_counter()
        env_ids = self.plan(step)
        sampled = self.sampler.stats.snapshot()
        self.policy.name = self.policy_name(step)
        self.model.eval()
        with torch.no_grad():
            collected = collect(self.store, self.run_id, step, env_ids, cfg.group_size, cfg.seed,
                          lambda e, g, s: self._run_one(e, g, s, step), workers=cfg.rollout_workers,
                          on_done=self.on_rollout)
        rollouts = collected.rollouts
        built: list[TokenSequence | ValueError] = []
        for r in rollouts:
            try:
                built.append(build_sequence(r.turns))
            except ValueError as exc:
                built.append(exc)
            r.overlong = isinstance(built[-1], TokenSequence) and len(built[-1].input_ids) > cfg.max_seq_len
            r.stale = not fresh(r, step - 1)
        stats = group_advantages([r.reward for r in rollouts], [r.group_id for r in rollouts],
                                 masked=[r.masked for r in rollouts], scale=cfg.scale_rewards,
                                 equal_group=cfg.equal_group, equal_weight=cfg.equal_group_weight)
        by_group: dict[str, list[Rollout]] = {}
        for r in rollouts:
            by_group.setdefault(r.group_id, []).append(r)
        for members in by_group.values():
            live = [m.reward for m in members if not m.masked]
            self.curriculum.update(members[0].env_id, live)
        seqs = []
        for r, seq, w in zip(rollouts, built, stats.weights):
            if isinstance(seq, ValueError):
                if w > 0:
                    raise TrainingError(f"trajectory {r.id}: {seq}")
                seq = TokenSequence([], [], [])  # masked anyway: its tokens are not needed
            seqs.append(seq)
        t_upd = time.perf_counter()
        self.sampler.sleep()  # no batch runs while the weights change (colocated vLLM frees its memory)
        try:
            update = grpo_update(self.model, self.optimizer, seqs, stats.advantages, stats.weights,
                                 clip_low=cfg.clip_low,
                             clip_high=cfg.clip_high, kl_coef=cfg.kl_coef, temperature=cfg.temperature,
                             micro_batch=cfg.micro_batch, mu=cfg.mu, max_grad_norm=cfg.max_grad_norm,
                             pad_id=self.tokenizer.pad_token_id or 0, device=self.device, tis_cap=cfg.tis_cap,
                             logprob_chunk=cfg.logprob_chunk)
            update_s = time.perf_counter() - t_upd
            self.sampler.publish(self.model, step)
        finally:
            self.sampler.wake_up()
        rewards = [r.reward for r in rollouts]
        wall = sum(r.wall_s for r in rollouts) or 1e-9
        ranks = [r.human_rank for r in rollouts if r.human_rank is not None]
        metrics = {
            "reward_mean": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
            "valid_rate": statistics.fmean(r.valid for r in rollouts),
            "medal_rate": statistics.fmean(r.medal for r in rollouts),
            "human_rank": statistics.fmean(ranks) if ranks else None,
            "loss": update.loss, "pg_loss": update.pg_loss, "kl": update.kl, "clip_fraction": update.clip_fraction,
            "ratio_mean": update.ratio_mean, "grad_norm": update.grad_norm,
            "sampler_logp_diff": update.sampler_logp_diff, "sampler_kl": update.sampler_kl,
            "tis_capped": update.tis_capped,
            "tokens": float(sum(s.model_tokens for s in seqs)), "seq_tokens": float(sum(len(s.input_ids) for s in seqs)),
            "trained_trajectories": float(update.trained_trajectories),
            "skipped_groups": float(stats.equal_groups), "groups": float(stats.groups),
            "timed_out": float(sum(r.timed_out or r.errored for r in rollouts)),
            "overlong": float(sum(r.overlong for r in rollouts)), "stale": float(sum(r.stale for r in rollouts)),
            "reused_rollouts": float(collected.reused),
            "rollout_s": collected.wall_s, "update_s": update_s, "publish_s": time.perf_counter() - t_upd - update_s,
            "sandbox_wait_share": sum(r.sandbox_s for r in rollouts) / wall,
            **self.sampler.stats.since(sampled),
            "step_s": time.perf_counter() - t0,
        }
        warning = self.watch.update(step, metrics)
        metrics["collapse"] = float(warning is not None)
        self.store.runs.log_metrics(self.run_id, step, metrics)
        if warning is not None:
            self.warnings.append(warning)
            if self.on_warning:
                self.on_warning(warning)
        return metrics

    # ------------------------------------------------------------------ the loop
    def request_stop(self, *_: Any) -> None:
        self._stop.set()

    def _stop_requested(self) -> bool:
        if self._stop.is_set():
            return True
        row = self.store.runs.get(self.run_id)
        return row["status"] == "stopped"

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()

    def checkpoint(self, step: int) -> Path:
        return save_checkpoint(self.store, self.run_id, self.run_dir, step, self.model, optimizer=self.optimizer,
                               extra={"curriculum": self.curriculum.state_dict(), "sampler_rng": self.rng.getstate()})

    def train(self) -> dict[str, Any]:
        if self.model is None:
            self.setup()
        cfg = self.cfg
        self.store.runs.start(self.run_id)
        old_handler = None
        if threading.current_thread() is threading.main_thread():
            old_handler = signal.signal(signal.SIGTERM, self.request_stop)
        last_saved = self.start_step - 1
        done = self.start_step - 1
        status = "done"
        try:
            for step in range(self.start_step, cfg.steps + 1):
                if self._stop_requested():
                    status = "stopped"
                    break
                metrics = self.step(step)
                done = step
                if step % cfg.save_every == 0 or step == cfg.steps:
                    self.checkpoint(step)
                    last_saved = step
                if self.on_step:
                    self.on_step(step, metrics)
        except KeyboardInterrupt:
            status = "stopped"
            self.interrupted = True
        except BaseException as exc:
            if done > last_saved and self.model is not None:
                self.checkpoint(done)
            self.store.runs.finish(self.run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            if old_handler is not None:
                signal.signal(signal.SIGTERM, old_handler)
            self.close()
        if done > last_saved:
            self.checkpoint(done)
        latest = self.store.runs.latest_checkpoint(self.run_id)
        summary = {"steps_done": done, "steps": cfg.steps, "adapter": latest["path"] if latest else None,
                   "envs": len(self.env_ids), "status": status, "warnings": self.warnings}
        self.store.runs.finish(self.run_id, status, summary=summary)
        return summary
