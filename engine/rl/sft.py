"""SFT with TRL's SFTTrainer on stored trajectories filtered by reward: loss only on assistant tokens (the
pre-tokenized ``assistant_masks`` column), LoRA via PEFT, checkpoints in PEFT's format recorded in the store, metrics
per logged step, and resume from the last checkpoint (TRL/transformers' own ``resume_from_checkpoint``)."""

from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from store import Store, fsync_folder, sha256_file
from store.runs import new_id
from store.trajectories import Trajectory

from ..envs.layout import REAL_SPLIT
from ..errors import TrainingError
from ..models.adapters import resolve_adapter
from ..upkeep import resumable
from ..models.loading import pick_dtype
from .config import SFTConfig, config_from_dict
from .distributed import ONE, Processes
from .modeling import load_for_training, resolve_model
from .render import reply_views, sft_example


def select_trajectories(store: Store, cfg: SFTConfig) -> list[Trajectory]:
    source = store.runs.get(cfg.source_run)["id"] if cfg.source_run else None  # a unique prefix works too
    rows = store.trajectories.list(run_id=source, policy=None, min_reward=cfg.min_reward)
    if cfg.source_policy:
        more = (cfg.source_policy + ":", cfg.source_policy + ",")  # the same policy with more options
        rows = [r for r in rows if r.policy == cfg.source_policy or r.policy.startswith(more)]
    if cfg.scaffold:
        rows = [r for r in rows if r.scaffold == cfg.scaffold]
    if cfg.env_split == "all":  # every trajectory but those on real competitions (evaluation only)
        real = {e["id"] for e in store.envs.list(split=REAL_SPLIT)}
        rows = [r for r in rows if r.env_id not in real]
    else:
        allowed = {e["id"] for e in store.envs.list(split=cfg.env_split)}
        rows = [r for r in rows if r.env_id in allowed]
    rows = [r for r in rows if not r.timed_out]
    if cfg.max_samples is not None:
        rows = rows[: cfg.max_samples]
    if not rows:
        raise TrainingError(f"no stored trajectories with reward >= {cfg.min_reward} to learn from"
                            + (f" in run {cfg.source_run}" if cfg.source_run else ""),
                            hint="collect some first, e.g. sandmle rollout --policy scripted")
    return rows


def build_dataset(store: Store, tokenizer: Any, cfg: SFTConfig):
    from datasets import Dataset  # heavy optional dependency: loaded only when used

    examples = []
    for row in select_trajectories(store, cfg):
        full = store.trajectories.get(row.id)
        for turns in reply_views(full.scaffold, full.turns):  # what the policy read before each reply
            ex = sft_example(tokenizer, turns, cfg.max_seq_len)
            if sum(ex["assistant_masks"]):
                examples.append(ex)
    return Dataset.from_list(examples)


def zero_unseen_embeddings(model: Any, data: Any) -> int:
    """Set to zero the embedding of every token no training example contains (the input embeddings, and so the
    tied LM head's rows): after full fine-tuning of a random-init model those rows are still random noise, which
    a prompt full of such tokens (names the training data never had) feeds into every layer. Returns how many."""
    import torch  # heavy optional dependency: loaded only when used

    weight = model.get_input_embeddings().weight
    seen = torch.zeros(weight.shape[0], dtype=torch.bool, device=weight.device)
    for ids in data["input_ids"]:
        seen[torch.as_tensor(ids, dtype=torch.long, device=weight.device)] = True
    with torch.no_grad():
        weight[~seen] = 0.0
    return int((~seen).sum())


class SFTRun:
    def __init__(self, store: Store, cfg: SFTConfig, *, run_id: str | None = None,
                 on_progress: Callable[[int, int, dict], None] | None = None, processes: Processes = ONE):
        self.store, self.cfg, self.on_progress, self.processes = store, cfg, on_progress, processes
        if run_id is None and processes.is_main:
            run_id = new_id("sft")
            store.runs.create("sft", asdict(cfg), name=cfg.name, dir=str(store.data_dir / "runs" / run_id),
                              run_id=run_id)
        run_id = processes.broadcast(run_id)  # the main process made the run; the others train under its id
        self.run_dir = Path(store.runs.get(run_id)["dir"] or store.data_dir / "runs" / run_id)
        self.run_id = run_id
        self.run_dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def resume(cls, store: Store, run_id: str, **kw: Any) -> "SFTRun":
        row = resumable(store, run_id, "sft")
        return cls(store, config_from_dict(SFTConfig, row["config"]), run_id=row["id"], **kw)

    def train(self) -> dict[str, Any]:
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        import datasets  # heavy optional dependency: loaded only when used
        from transformers import PrinterCallback, ProgressCallback, set_seed  # heavy: loaded when used
        from transformers.utils import logging as hf_logging  # heavy optional dependency: loaded only when used
        from trl import SFTTrainer  # heavy optional dependency: loaded only when used

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        datasets.disable_progress_bars()
        cfg, store, run_id = self.cfg, self.store, self.run_id
        adapter = resolve_adapter(cfg.adapter, store) if cfg.adapter else None
        base = resolve_model(cfg.model, store)
        set_seed(cfg.seed)  # the new LoRA's initial weights come from the seed, not from whatever ran before
        model, tok, device = load_for_training(base, adapter=adapter, lora_r=cfg.lora_r, lora_alpha=cfg.lora_alpha,
                                               lora_dropout=cfg.lora_dropout, modules_to_save=cfg.lora_modules_to_save,
                                               device=self.processes.device or cfg.device, full=cfg.full_finetune)
        data = build_dataset(store, tok, cfg)
        main = self.processes.is_main  # only the main process writes to the store
        self._stop = threading.Event()
        trainer = SFTTrainer(model=model, args=self._training_args(device), train_dataset=data, processing_class=tok,
                             callbacks=[self._store_callback()])
        for cb in (PrinterCallback, ProgressCallback):  # progress goes to the CLI's bar and the store instead
            trainer.remove_callback(cb)
        latest = store.runs.latest_checkpoint(run_id)
        resume = latest["path"] if latest and Path(latest["path"]).is_dir() else None
        if main:
            store.runs.start(run_id)
            config = store.runs.get(run_id)["config"]
            store.runs.update(run_id, config={**config, "world_size": self.processes.world_size})
        old = None
        if threading.current_thread() is threading.main_thread():
            old = signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        try:
            out = trainer.train(resume_from_checkpoint=resume)
        except KeyboardInterrupt:
            self._stop.set()
            trainer.save_model(str(self.run_dir / "interrupted"))
            if main:
                store.runs.finish(run_id, "stopped")
            raise
        except BaseException as exc:
            if main:
                store.runs.finish(run_id, "failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            if old is not None:
                signal.signal(signal.SIGTERM, old)
        status = "stopped" if self._stop.is_set() else "done"
        if cfg.zero_unseen_tokens:
            zero_unseen_embeddings(model, data)
        summary = {**self._save_final(trainer, tok, base), "examples": len(data), "steps": trainer.state.global_step,
                   "train_loss": float(out.training_loss), "status": status,
                   "world_size": self.processes.world_size}
        if main:
            store.runs.finish(run_id, status, summary=summary)
        return summary

    def _save_final(self, trainer: Any, tokenizer: Any, base: str) -> dict[str, str]:
        """The run's result: ``{"adapter": folder}``, or with ``full_finetune`` ``{"model": folder}`` — a whole
        model folder (weights, tokenizer, the base's ``sandmle.json`` noting where it came from)."""
        if not self.cfg.full_finetune:
            final = self.run_dir / "adapter"
            trainer.save_model(str(final))
            if self.processes.is_main:
                fsync_folder(final)  # on the disk before the run's row says where it is
            return {"adapter": str(final)}
        final = self.run_dir / "model"
        trainer.save_model(str(final))
        if self.processes.is_main:
            tokenizer.save_pretrained(str(final))
            meta_file = Path(base) / "sandmle.json"
            meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
            (final / "sandmle.json").write_text(json.dumps({**meta, "trained_from": base, "sft_run": self.run_id},
                                                           indent=2))
            fsync_folder(final)
        return {"model": str(final)}

    def _training_args(self, device: str) -> Any:
        """TRL's SFT settings for this run's config on ``device`` (checkpoints under the run folder)."""
        from trl import SFTConfig as TRLSFTConfig  # heavy optional dependency: loaded only when used

        cfg = self.cfg
        bf16 = device.startswith("cuda") and "bfloat16" in str(pick_dtype(device))
        return TRLSFTConfig(
            output_dir=str(self.run_dir / "checkpoints"), num_train_epochs=cfg.epochs,
            per_device_train_batch_size=cfg.batch_size, learning_rate=cfg.lr, weight_decay=cfg.weight_decay,
            max_grad_norm=cfg.max_grad_norm, logging_steps=1, save_strategy="steps", save_steps=cfg.save_every,
            use_cpu=device == "cpu", bf16=bf16, report_to=[], seed=cfg.seed, max_length=cfg.max_seq_len,
            disable_tqdm=True, lr_scheduler_type="constant", save_only_model=False, dataloader_num_workers=0,
            gradient_accumulation_steps=cfg.grad_accum,
            # several processes (accelerate launched them): DDP, or FSDP with `fsdp`; gloo where there is no GPU
            ddp_backend="gloo" if device == "cpu" and self.processes.world_size > 1 else None,
            fsdp="full_shard auto_wrap" if cfg.fsdp else "", fsdp_config={"use_orig_params": True} if cfg.fsdp else None,
        )

    def _store_callback(self) -> Any:
        """The trainer callback that logs metrics and checkpoints to the store (main process only), reports
        progress, and stops after the current step once a stop was asked for."""
        from transformers import TrainerCallback  # heavy optional dependency: loaded only when used

        outer, store, run_id, main = self, self.store, self.run_id, self.processes.is_main

        class ToStore(TrainerCallback):
            def on_log(self, args, state, control, logs=None, **kw):
                vals = {k: v for k, v in (logs or {}).items() if isinstance(v, (int, float))}
                if not main:
                    return
                if vals:
                    store.runs.log_metrics(run_id, state.global_step, vals)
                if outer.on_progress:
                    outer.on_progress(state.global_step, state.max_steps, vals)

            def on_save(self, args, state, control, **kw):
                path = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                f = path / ("model.safetensors" if outer.cfg.full_finetune else "adapter_model.safetensors")
                if main and f.is_file():
                    fsync_folder(path)  # written in place by the trainer: on the disk before the store records it
                    store.runs.add_checkpoint(run_id, state.global_step, str(path), sha256_file(f),
                                              state={"format": "transformers-trainer"})

            def on_step_end(self, args, state, control, **kw):
                if outer._stop.is_set():
                    control.should_save = True
                    control.should_training_stop = True

        return ToStore()
