"""Trajectory-wise GRPO, a compact loop on torch + PEFT (see docs/training.md for why not TRL's GRPOTrainer).

Per step: pick environments (curriculum), run G rollouts each in the scaffold with the current policy (episodes
stored as they finish), turn each trajectory into its exact token sequence (observations masked), compute
group-normalized advantages (timed-out and errored episodes masked, all-equal groups skipped or down-weighted), one
clipped token-mean update of the LoRA adapter (KL measured from the policy the run started from), metrics to the
store, and a checkpoint every K steps. Resuming restores the adapter, optimizer, RNG, curriculum and the
environments of the steps launched ahead of the checkpoint, takes back the rollouts already stored for the steps
after it (an ``error`` episode is played again), so no step is counted twice, no stored result is lost or sampled
again, and the run trains on the environments an uninterrupted run would.

Scale (docs/scaling.md): rollouts run on an executor (``local`` threads share the trainer's sampler;
``process`` / ``ray`` workers load each adapter the trainer publishes); with ``max_staleness`` k the rollouts of
the next k steps are queued while this step's update runs (the sampler keeps its own copy of the weights), and
every trajectory's staleness is stored; with several ``processes`` (accelerate) each takes a share of the
rollouts, the group statistics are over the whole batch and the update is data-parallel."""

from __future__ import annotations

import copy
import dataclasses
import random
import shutil
import signal
import statistics
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

import torch

from store import Store
from store.runs import new_id

from ..agents.policies.hf import HFPolicy
from ..agents.rollout import run_episode
from ..config import ExecutorSettings, SandboxSettings, load_settings
from ..envs.layout import REAL_SPLIT, EnvSpec
from ..errors import TrainingError
from ..executors import Executor, executor_class, get_executor
from ..inference import Sampler, make_sampler
from ..inference.served import freeze_saved_modules
from ..models.adapters import resolve_adapter
from ..upkeep import resumable
from .checkpoint import load_adapter_weights, load_state, save_checkpoint, set_rng_state, verify
from .config import GRPOConfig, config_from_dict
from .curriculum import Curriculum
from .health import CollapseWatch
from .distributed import ONE, Processes, TokenLogProbs, trainable_weights
from .modeling import load_for_training, resolve_model
from .objective import GroupStats, TokenSequence, group_advantages
from .render import reply_sequences
from .rollouts import PendingStep, PolicyRef, Rollout, RolloutItem, fresh, launch, staleness, stored_plan
from .update import UpdateStats, grpo_update, make_optimizer

PolicyFactory = Callable[[Any, Any, GRPOConfig, Any], Any]
EpisodeFn = Callable[..., Any]


def default_policy_factory(model: Any, tokenizer: Any, cfg: GRPOConfig, sampler: Sampler) -> Any:
    """The agents' hf policy around the live (training) model: it renders messages into tokens once, samples
    through the trainer's sampler and records exact tokens, log-probs and the policy version."""
    return HFPolicy.from_loaded(model, tokenizer, sampler, temperature=cfg.temperature, top_p=cfg.top_p,
                                max_new_tokens=cfg.max_new_tokens)


def copy_trainable(source: Any, target: Any) -> None:
    """Copy the trained parameters (adapter, modules_to_save) of ``source`` into its copy ``target``."""
    params = dict(target.named_parameters())
    with torch.no_grad():
        for name, p in source.named_parameters():
            if p.requires_grad:
                params[name].copy_(p)


def select_envs(store: Store, cfg: GRPOConfig) -> list[str]:
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


def rollout_metrics(rollouts: list[Rollout]) -> dict[str, float | None]:
    """What the step's rollouts (every process's) scored and how they ran. The rates are over the rollouts that
    have a result: an ``error`` episode (an infrastructure or grading fault) has none — it is counted apart, as
    ``errored`` (the rates are 0 in a step where every rollout errored)."""
    scored = [r for r in rollouts if not r.errored]
    rewards = [r.reward for r in scored] or [0.0]
    ranks = [r.rank for r in scored if r.rank is not None]
    lags = [r.staleness for r in rollouts if r.staleness is not None]
    wall = sum(r.wall_s for r in rollouts) or 1e-9
    return {
        "reward_mean": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
        "valid_rate": statistics.fmean([r.valid for r in scored] or [0.0]),
        "medal_rate": statistics.fmean([r.medal for r in scored] or [0.0]),
        "rank": statistics.fmean(ranks) if ranks else None,
        "timed_out": float(sum(r.timed_out and not r.errored for r in rollouts)),
        "errored": float(sum(r.errored for r in rollouts)),
        "overlong": float(sum(r.overlong for r in rollouts)), "stale": float(sum(r.stale for r in rollouts)),
        "staleness_mean": statistics.fmean(lags) if lags else None,
        "staleness_max": float(max(lags)) if lags else None,
        "sandbox_wait_share": sum(r.sandbox_s for r in rollouts) / wall,
    }


def run_settings(config: dict[str, Any]) -> tuple[SandboxSettings, ExecutorSettings]:
    """The ``[sandbox]`` and ``[executor]`` a stored GRPO run ran under (a run stored before they were kept there:
    the current settings with its config's overrides)."""
    settings = load_settings()
    if isinstance(config.get("sandbox"), dict) and isinstance(config.get("executor"), dict):
        return SandboxSettings(**config["sandbox"]), ExecutorSettings(**config["executor"])
    return (settings.sandbox.override(backend=config.get("sandbox_backend"), memory_mb=config.get("memory_mb"),
                                      max_procs=config.get("max_procs")),
            settings.executor.override(kind=config.get("executor"), ray_address=config.get("address")))


class GRPOTrainer:
    def __init__(self, store: Store, cfg: GRPOConfig, *, run_id: str | None = None, parent_id: str | None = None,
                 policy_factory: PolicyFactory | None = None, episode_fn: EpisodeFn | None = None,
                 on_step: Callable[[int, dict], None] | None = None, on_rollout: Callable[[Rollout], None] | None = None,
                 on_lost: Callable[[str], None] | None = None, processes: Processes = ONE,
                 sandbox: SandboxSettings | None = None, executor: ExecutorSettings | None = None):
        """Rollout code runs under ``sandbox`` and ``executor`` runs the rollouts (``cfg.rollout_workers`` of them at
        once); both default to the settings (``[sandbox]``, ``[executor]``) and are stored with the run."""
        settings = load_settings()
        #: where rollout code runs, and who runs the rollouts (stored with the run: a resume keeps them)
        self.sandbox = sandbox or settings.sandbox
        self.executor_settings = (executor or settings.executor).override(workers=cfg.rollout_workers)
        kind = self.executor_settings.kind
        #: rollout workers live in other processes and load the published adapters themselves
        self.remote = not executor_class(kind).in_process
        if self.remote and cfg.sampler != "hf":
            raise TrainingError(f"rollout workers of the {kind} executor sample with their own copy of the "
                                f"policy: executor = {kind} needs sampler = hf")
        self.store, self.cfg, self.processes = store, cfg, processes
        self.policy_factory = policy_factory or default_policy_factory
        self.episode_fn: EpisodeFn = episode_fn or run_episode
        self.on_step, self.on_rollout = on_step, on_rollout
        self.workers_lost: list[str] = []
        self.env_ids = select_envs(store, cfg)
        #: who runs the rollouts; every worker's sandbox backend starts here (kept warm between episodes): a backend
        #: that cannot start fails before the run is stored
        self.executor: Executor = get_executor(kind, workers=cfg.rollout_workers, store=store, sandbox=self.sandbox,
                                               address=self.executor_settings.ray_address, on_lost=on_lost).prepare()
        config = {**asdict(cfg), "sandbox": self.sandbox.model_dump(), "isolation": self.sandbox.isolation_note,
                  "executor": self.executor_settings.model_dump()}
        if run_id is None and processes.is_main:
            run_id = new_id("grpo")
            store.runs.create("grpo", config, name=cfg.name, parent_id=parent_id,
                              dir=str(store.data_dir / "runs" / run_id), run_id=run_id)
        elif run_id is not None and processes.is_main:  # a launcher's (a workbench job) or a resumed run
            store.runs.update(run_id, config={**(store.runs.get(run_id)["config"] or {}), **config})
        run_id = processes.broadcast(run_id)  # the main process made the run; the others train under its id
        row = store.runs.get(run_id)
        folder = row.get("dir")
        self.run_dir = Path(folder) if folder else store.data_dir / "runs" / run_id
        self.run_id = run_id
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._stop = threading.Event()
        # set by setup(): the policy with its LoRA adapter, its tokenizer, the optimizer, the log-probs the update
        # goes through (DDP-wrapped with several processes), the sampler it publishes to (local rollouts)
        self.model: Any = None
        self.tokenizer: Any = None
        self.optimizer: Any = None
        self.scorer: Any = None
        self.sampler: Sampler | None = None
        self.start_step = 1
        self.watch = CollapseWatch()
        self.warnings: list[str] = []
        self.on_warning: Callable[[str], None] | None = None
        self.interrupted = False  #: ended by Ctrl-C (KeyboardInterrupt), not by a stop request
        #: the policy version rollouts sample from now (= GRPO updates applied to the published weights)
        self.version = 0

    # ------------------------------------------------------------------ construction / resume
    @classmethod
    def resume(cls, store: Store, run_id: str, **kw: Any) -> "GRPOTrainer":
        row = resumable(store, run_id, "grpo")
        cfg = config_from_dict(GRPOConfig, row["config"])
        sandbox, executor = run_settings(row["config"])
        return cls(store, cfg, run_id=row["id"], sandbox=sandbox, executor=executor, **kw)

    def setup(self) -> None:
        cfg = self.cfg
        random.seed(cfg.seed)
        torch.manual_seed(cfg.seed)
        self.model_path = resolve_model(cfg.model, self.store)
        adapter = resolve_adapter(cfg.adapter, self.store) if cfg.adapter else None
        self.model, self.tokenizer, self.device = load_for_training(
            self.model_path, adapter=adapter, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout, modules_to_save=cfg.lora_modules_to_save,
            device=self.processes.device or cfg.device, gradient_checkpointing=cfg.gradient_checkpointing)
        if cfg.sampler != "hf" and (frozen := freeze_saved_modules(self.model)):
            self._warn(f"vLLM serves LoRA weights only: the {len(frozen)} modules the adapter trained in full "
                       f"({', '.join(frozen[:2])}{', …' if len(frozen) > 2 else ''}) stay frozen and are served "
                       "merged into the base")
        self.optimizer = make_optimizer(self.model, cfg.lr, cfg.weight_decay)
        #: the policy GRPO starts from (the starting adapter, before any checkpoint is loaded): the KL reference
        start = trainable_weights(self.model)
        self.curriculum = Curriculum(self.env_ids, window=cfg.curriculum_window, floor=cfg.curriculum_floor,
                                     enabled=cfg.curriculum)
        self.rng = random.Random(cfg.seed)
        #: step → its environments, as drawn when its rollouts were launched (kept in the checkpoint for the steps
        #: launched ahead of it: a resume plans them as the run did, from an RNG already past their draw)
        self.plans: dict[int, list[str]] = {}
        ckpt = self.store.runs.latest_checkpoint(self.run_id)
        if ckpt is not None:
            if not verify(ckpt):
                raise TrainingError(f"checkpoint {ckpt['path']} does not match its recorded hashes (adapter, "
                                    "trainer state): refused")
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
            # the environments of the steps launched ahead of the checkpoint: drawn once, before the RNG state saved
            self.plans = {int(k): list(v) for k, v in extra.get("plans", {}).items()}
            self.start_step = int(state["step"]) + 1
            for step, values in self._logged_steps():
                if (warning := self.watch.update(step, values)) is not None:
                    self.warnings.append(warning)
        self.scorer, self.optimizer = self.processes.prepare(
            TokenLogProbs(self.model, cfg.temperature, cfg.logprob_chunk, cfg.top_p, start=start), self.optimizer)
        # rollouts sampling while the update runs need weights of their own: the hf sampler gets a copy
        self.sampling_model = copy.deepcopy(self.model) if cfg.max_staleness and cfg.sampler == "hf" else self.model
        if not self.remote:
            self.sampler = make_sampler(cfg.sampler, self.sampling_model, model_path=self.model_path,
                                        work_dir=self.run_dir / "sampler", url=cfg.sampler_url,
                                        max_batch=cfg.sampler_batch, prefix_cache_tokens=cfg.sampler_prefix_cache,
                                        lora_rank=cfg.lora_r, seed=cfg.seed, warn=self._warn)
            self.policy = self.policy_factory(self.sampling_model, self.tokenizer, cfg, self.sampler)
        self.publish(self.start_step - 1)

    def _warn(self, text: str) -> None:
        self.warnings.append(text)
        if self.on_warning:
            self.on_warning(text)

    # ------------------------------------------------------------------ the policy rollouts sample from
    def publish(self, version: int) -> None:
        """Make the trained weights the policy rollouts sample from, as ``version``: into the sampler (its own
        copy of the weights when rollouts overlap the update), or as an adapter folder the process / Ray workers
        load (written once, by the main process)."""
        self.version = version
        self.sampling_model.eval()  # no dropout while sampling (the update sets train mode)
        if self.sampler is not None:
            self.sampler.sleep()  # no batch runs while the weights change
            try:
                if self.sampling_model is not self.model:
                    copy_trainable(self.model, self.sampling_model)
                self.sampler.publish(self.sampling_model, version)
            finally:
                self.sampler.wake_up()
            return
        if self.processes.is_main:
            self.model.save_pretrained(str(self.policy_dir(version)))
            old = self.policy_dir(version - self.cfg.max_staleness - 2)
            if old.exists():  # no queued rollout can still ask for it
                shutil.rmtree(old)
        self.processes.wait()

    def policy_dir(self, version: int) -> Path:
        return self.run_dir / "policy" / f"v{version:06d}"

    def _launch(self, step: int) -> PendingStep:
        """Queue this process's rollouts of ``step`` (those not stored yet), sampling with the current version."""
        cfg = self.cfg
        name = self.policy_name(self.version)
        if self.remote:
            policy: Any = PolicyRef(self.model_path, str(self.policy_dir(self.version)), self.version, name,
                                    cfg.temperature, cfg.top_p, cfg.max_new_tokens)
        else:  # the shared policy under this version's name (rollouts of the previous version may still run)
            policy = copy.copy(self.policy)
            policy.name = name
        kw = {"max_turns": cfg.max_turns, "step_timeout_s": cfg.step_timeout_s,
              "episode_timeout_s": cfg.episode_timeout_s, "reward": cfg.reward}
        return launch(self.executor, self.store, self.run_id, step, self.plan(step), cfg.group_size, cfg.seed,
                      lambda env_id, gid, seed: RolloutItem(EnvSpec.from_store(self.store, env_id), gid, seed, step,
                                                            self.run_id, policy, cfg.scaffold, kw, self.episode_fn),
                      share=self.processes.share)

    def _logged_steps(self) -> list[tuple[int, dict[str, float]]]:
        """(step, metrics) of the steps already logged (a resumed run's collapse watch starts from them)."""
        by_step: dict[int, dict[str, float]] = {}
        for name, points in self.store.runs.metrics(self.run_id).items():
            for step, value in points:
                if step < self.start_step:
                    by_step.setdefault(step, {})[name] = value
        return [(k, v) for k, v in sorted(by_step.items()) if "reward_mean" in v]

    def policy_name(self, version: int) -> str:
        """What rollouts sampled by ``version`` sample from: the model plus the adapter after ``version`` updates
        (the starting adapter before the first), named so that it loads again (``adapter=RUN_ID@STEP``)."""
        name = f"hf:{self.cfg.model}"
        if version > 0:
            return f"{name},adapter={self.run_id}@{version}"
        return name + (f",adapter={self.cfg.adapter}" if self.cfg.adapter else "")

    def plan(self, step: int) -> list[str]:
        """The step's environments: as drawn when it was launched before (a step launched ahead of the checkpoint a
        run resumes from), else those of groups already stored for it (resume) and the rest from the curriculum."""
        if step not in self.plans:
            have = stored_plan(self.store, self.run_id, step)
            fresh_envs = self.curriculum.sample(self.cfg.envs_per_step, self.rng)
            self.plans[step] = [have.get(k, fresh_envs[k]) for k in range(self.cfg.envs_per_step)]
        return self.plans[step]

    # ------------------------------------------------------------------ one step
    def step(self, step: int, pending: PendingStep | None = None) -> dict[str, float]:
        """Collect the step's rollouts (queued by :meth:`_launch`, or now), update, publish; the step's metrics."""
        t0 = time.perf_counter()
        sampled = self.sampler.stats.snapshot() if self.sampler is not None else None
        collected = (pending or self._launch(step)).collect(self.on_rollout)
        mine = collected.rollouts
        built = self._sequences(mine, step)
        rollouts, stats = self._advantages(mine)
        by_id = {r.id: (a, w) for r, a, w in zip(rollouts, stats.advantages, stats.weights)}
        seqs: list[TokenSequence] = []
        owners: list[str] = []  # the rollout of each sequence: its advantage and weight, counted once
        for r, got in zip(mine, built):
            if isinstance(got, ValueError):
                if by_id[r.id][1] > 0:
                    raise TrainingError(f"trajectory {r.id}: {got}")
                got = [TokenSequence([], [], [])]  # masked anyway: its tokens are not needed
            seqs.extend(got)
            owners.extend([r.id] * len(got))
        t_upd = time.perf_counter()
        update = self._update(seqs, [by_id[o][0] for o in owners], [by_id[o][1] for o in owners], owners)
        update_s = time.perf_counter() - t_upd
        self.publish(step)
        metrics = {
            **rollout_metrics(rollouts),
            "loss": update.loss, "pg_loss": update.pg_loss, "kl": update.kl, "clip_fraction": update.clip_fraction,
            "ratio_mean": update.ratio_mean, "grad_norm": update.grad_norm,
            "sampler_logp_diff": update.sampler_logp_diff, "sampler_kl": update.sampler_kl,
            "tis_capped": update.tis_capped, "tokens": float(update.trained_tokens),
            "seq_tokens": self.processes.total(sum(len(s.input_ids) for s in seqs)),
            "trained_trajectories": float(update.trained_trajectories),
            "skipped_groups": float(stats.equal_groups), "groups": float(stats.groups),
            "reused_rollouts": self.processes.total(collected.reused),
            "rollout_s": collected.wall_s, "update_s": update_s, "publish_s": time.perf_counter() - t_upd - update_s,
            **(self.sampler.stats.since(sampled) if self.sampler is not None and sampled is not None else {}),
            "step_s": time.perf_counter() - t0,
        }
        warning = self.watch.update(step, metrics)
        metrics["collapse"] = float(warning is not None)
        if self.processes.is_main:
            self.store.runs.log_metrics(self.run_id, step, metrics)
        if warning is not None:
            self.warnings.append(warning)
            if self.on_warning:
                self.on_warning(warning)
        return metrics

    def _sequences(self, mine: list[Rollout], step: int) -> list[list[TokenSequence] | ValueError]:
        """Each rollout's exact token sequences — one per reply context of the scaffold (:func:`reply_sequences`:
        an aide reply under the two messages it was sampled from, not the whole transcript) — or why it has none;
        marks the over-long ones and stores how many updates behind the trained weights each one's sampling weights
        are (those staler than allowed: refused)."""
        built: list[list[TokenSequence] | ValueError] = []
        for r in mine:
            try:
                built.append(reply_sequences(self.cfg.scaffold, r.turns))
            except ValueError as exc:
                built.append(exc)
            got = built[-1]
            r.overlong = not isinstance(got, ValueError) and any(len(s.input_ids) > self.cfg.max_seq_len for s in got)
            r.staleness = staleness(r, step - 1)
            r.stale = not fresh(r, step - 1, self.cfg.max_staleness)
        self.store.trajectories.set_staleness({r.id: r.staleness for r in mine})
        return built

    def _advantages(self, mine: list[Rollout]) -> tuple[list[Rollout], GroupStats]:
        """Every process's rollouts (without their turns: the group statistics are over whole groups), sorted, and
        their advantages and weights; the curriculum learns each group's rewards."""
        cfg = self.cfg
        rollouts = sorted(self.processes.gather([dataclasses.replace(r, turns=[]) for r in mine]),
                          key=lambda r: (r.group_id, r.rng_seed))
        stats = group_advantages([r.reward for r in rollouts], [r.group_id for r in rollouts],
                                 masked=[r.masked for r in rollouts], scale=cfg.scale_rewards,
                                 equal_group=cfg.equal_group, equal_weight=cfg.equal_group_weight)
        by_group: dict[str, list[Rollout]] = {}
        for r in rollouts:
            by_group.setdefault(r.group_id, []).append(r)
        for members in by_group.values():
            self.curriculum.update(members[0].env_id, [m.reward for m in members if not m.masked])
        return rollouts, stats

    def _update(self, seqs: list[TokenSequence], advantages: list[float], weights: list[float],
                owners: list[str] | None = None) -> UpdateStats:
        """One GRPO update on this process's sequences; the sampler pauses unless rollouts overlap the update (they
        then sample from their own copy of the weights)."""
        cfg = self.cfg
        pause = self.sampler if cfg.max_staleness == 0 else None
        if pause is not None:
            pause.sleep()  # no batch runs while the weights change (colocated vLLM frees its memory)
        try:
            return grpo_update(self.scorer, self.optimizer, seqs, advantages, weights, clip_low=cfg.clip_low,
                               clip_high=cfg.clip_high, kl_coef=cfg.kl_coef, micro_batch=cfg.micro_batch, mu=cfg.mu,
                               max_grad_norm=cfg.max_grad_norm, pad_id=self.tokenizer.pad_token_id or 0,
                               device=self.device, tis_cap=cfg.tis_cap, processes=self.processes, owners=owners)
        finally:
            if pause is not None:
                pause.wake_up()

    # ------------------------------------------------------------------ the loop
    def request_stop(self, *_: Any) -> None:
        self._stop.set()

    def _stop_requested(self) -> bool:
        """Asked here (a signal) or through the store (the workbench); the main process decides for all."""
        asked = self._stop.is_set() or self.store.runs.get(self.run_id)["status"] == "stopped"
        return bool(self.processes.broadcast(asked))

    def close(self) -> None:
        self.executor.close()  # closing twice is harmless
        self.workers_lost = list(self.executor.lost)
        if self.sampler is not None:
            self.sampler.close()
            self.sampler = None

    def checkpoint(self, step: int) -> Path | None:
        """Save (the main process) the checkpoint of ``step``; every process waits for it."""
        path = None
        self.plans = {k: v for k, v in self.plans.items() if k > step}  # those launched ahead of it
        if self.processes.is_main:
            path = save_checkpoint(self.store, self.run_id, self.run_dir, step, self.model, optimizer=self.optimizer,
                                   extra={"curriculum": self.curriculum.state_dict(),
                                          "sampler_rng": self.rng.getstate(),
                                          "plans": {str(k): list(v) for k, v in self.plans.items()}})
        self.processes.wait()
        return path

    def train(self) -> dict[str, Any]:
        if self.model is None:
            self.setup()
        cfg = self.cfg
        if self.processes.is_main:
            self.store.runs.start(self.run_id)
            config = self.store.runs.get(self.run_id)["config"]
            self.store.runs.update(self.run_id, config={**config, "world_size": self.processes.world_size})
        old_handler = None
        if threading.current_thread() is threading.main_thread():
            old_handler = signal.signal(signal.SIGTERM, self.request_stop)
        last_saved = self.start_step - 1
        done = self.start_step - 1
        status = "done"
        pending: dict[int, PendingStep] = {}
        try:
            for step in range(self.start_step, cfg.steps + 1):
                if self._stop_requested():
                    status = "stopped"
                    break
                # this step's rollouts, and those of the next max_staleness steps (they sample with the weights
                # of now while this step's update runs)
                for ahead in range(step, min(step + cfg.max_staleness, cfg.steps) + 1):
                    if ahead not in pending:
                        pending[ahead] = self._launch(ahead)
                metrics = self.step(step, pending.pop(step))
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
            if self.processes.is_main:
                self.store.runs.finish(self.run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            for queued in pending.values():
                queued.cancel()  # rollouts already running finish and are stored: a resume takes them back
            if old_handler is not None:
                signal.signal(signal.SIGTERM, old_handler)
            self.close()
        if done > last_saved:
            self.checkpoint(done)
        latest = self.store.runs.latest_checkpoint(self.run_id)
        summary = {"steps_done": done, "steps": cfg.steps, "adapter": latest["path"] if latest else None,
                   "envs": len(self.env_ids), "status": status, "warnings": self.warnings,
                   "world_size": self.processes.world_size, "workers_lost": self.workers_lost}
        if self.processes.is_main:
            self.store.runs.finish(self.run_id, status, summary=summary)
        return summary
