"""`sandmle train sft|grpo`: train a LoRA adapter. Every config field is a flag (help text from the config
dataclass); `--config FILE.toml` supplies defaults that flags override. A progress bar runs on stderr."""

from __future__ import annotations

import sys
import types
from dataclasses import MISSING, asdict, fields
from typing import Any, Callable

import click

from engine.config import load_settings
from engine.agents.tiny import recipe
from engine.rl.config import GRPOConfig, SFTConfig, load_config
from store import Store

from .common import Context, emit_json, executor_options, json_option, pass_ctx, progress, warn
from .sandbox_options import sandbox_options


def _click_type(tp: Any) -> tuple[Any, bool, bool]:
    """(click type, is_flag, multiple) for a dataclass field annotation (postponed annotations are strings)."""
    text = tp if isinstance(tp, str) else repr(tp)
    if text.startswith("list"):
        return str, False, True
    if "bool" in text:
        return bool, True, False
    if "int" in text and "float" not in text:
        return int, False, False
    if "float" in text:
        return float, False, False
    return str, False, False


def config_options(cls: type, kind: str) -> Callable:
    """Decorate a command with one option per config field (default None = "not given"); the help shows the
    default and, where it differs, `tiny`'s own."""
    tiny_defaults = recipe.defaults(kind, "tiny")
    with_vllm = recipe.defaults(kind, "tiny", "vllm")

    def deco(fn: Callable) -> Callable:
        for f in reversed(fields(cls)):
            ctype, is_flag, multiple = _click_type(f.type)
            name = "--" + f.name.replace("_", "-")
            default = f.default if f.default is not MISSING else "(see config)"
            tiny = f"; tiny: {tiny_defaults[f.name]}" if f.name in tiny_defaults else ""
            if with_vllm.get(f.name, tiny_defaults.get(f.name)) != tiny_defaults.get(f.name):
                tiny += f", with --sampler vllm: {with_vllm[f.name]}"
            help_text = f"{f.metadata.get('help', '')} [default: {default}{tiny}]"
            if is_flag:
                opt = click.option(f"{name}/--no-{f.name.replace('_', '-')}", f.name, default=None, help=help_text)
            elif multiple:
                opt = click.option(name, f.name, multiple=True, type=ctype, help=help_text + " (repeatable)")
            else:
                opt = click.option(name, f.name, type=ctype, default=None, help=help_text)
            fn = opt(fn)
        return fn
    return deco


def _overrides(cls: type, kw: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    out = {}
    for k, v in kw.items():
        if k in names and v is not None and not (isinstance(v, tuple) and not v):
            out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _job_run(store: Store, kind: str, cfg: Any) -> str | None:
    """The run row a workbench job made for this command, filled in with ``cfg`` and a run folder (the trainer then
    runs under the job's id); None outside a job, and the trainer makes its own."""
    run_id = store.runs.adopt(kind, asdict(cfg), name=cfg.name)
    if run_id is not None:
        store.runs.update(run_id, dir=str(store.data_dir / "runs" / run_id))
    return run_id


@click.group()
def train() -> None:
    """Train a LoRA adapter: SFT on good trajectories, then trajectory-wise GRPO."""


@train.command("grpo")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML file with GRPO settings.")
@json_option("the run summary")
@config_options(GRPOConfig, "grpo")
@executor_options
@sandbox_options(timeout=False)
@pass_ctx
def grpo(ctx: Context, config_file: str | None, as_json: bool, executor: str | None, address: str | None,
         sandbox_backend: str | None, isolation: str | None, memory_mb: int | None, max_procs: int | None,
         **kw: Any) -> None:
    """Trajectory-wise GRPO with LoRA: G rollouts per environment, group-normalized advantages, checkpoints every
    K steps (resume with `sandmle runs resume ID`). Rollout code runs under [sandbox] and [executor] of the
    settings, with the options given here."""
    from engine.rl.grpo import GRPOTrainer  # loads torch: only when training

    cfg = load_config(GRPOConfig, config_file, _overrides(GRPOConfig, kw))
    settings = load_settings()
    sandbox = settings.sandbox.override(backend=sandbox_backend, memory_mb=memory_mb, max_procs=max_procs,
                                        isolation=isolation)
    executor_settings = settings.executor.override(kind=executor, ray_address=address)
    processes = launch_processes(ctx, cfg)
    run_id = _job_run(ctx.store, "grpo", cfg) if processes.is_main else None
    trainer = GRPOTrainer(ctx.store, cfg, run_id=run_id, on_lost=warn, processes=processes, sandbox=sandbox,
                          executor=executor_settings)
    _run_grpo(trainer, as_json)


def launch_processes(ctx: Context, cfg: Any):
    """This process's place in the training run: with ``--processes N`` (N > 1) outside a launch, the command runs
    again in N processes under accelerate (this one waits and exits with their code); inside a launch (that one,
    or the user's own `accelerate launch`) the processes of the launch; otherwise a run of one process."""
    from engine.rl.distributed import Processes, relaunch, world_size_from_env  # loads torch: only when training

    if cfg.processes > 1 and world_size_from_env() <= 1:
        raise SystemExit(relaunch(cfg.processes, ctx.argv))
    return Processes.from_env(fsdp=cfg.fsdp, device=cfg.device)


def _run_grpo(trainer, as_json: bool) -> None:
    """Run (or resume) a GRPO run in the foreground. Exit code 130 when Ctrl-C stopped it, 143 when a stop request
    (`sandmle runs stop`, SIGTERM) did — both after the checkpoint — so scripts can tell a finished run apart."""
    if not trainer.processes.is_main:  # the main process reports for all
        trainer.train()
        return
    click.echo(f"run {trainer.run_id}" + (f" ({trainer.processes.world_size} processes)"
                                          if trainer.processes.world_size > 1 else ""), err=True)
    trainer.on_warning = lambda text: click.echo(f"\nwarning: {text}", err=True)
    trainer.setup()
    bar = progress(trainer.cfg.steps, f"grpo {trainer.run_id}")
    bar.update(trainer.start_step - 1)

    def on_step(step: int, m: dict) -> None:
        bar.label = f"grpo {trainer.run_id} reward {m['reward_mean']:.3f} medal {m['medal_rate']:.2f}"
        bar.update(1)

    trainer.on_step = on_step
    with bar:
        summary = trainer.train()
    summary["run_id"] = trainer.run_id
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"{trainer.run_id}: {summary.get('steps_done')} / {summary.get('steps')} steps; "
                   f"adapter {summary.get('adapter')}")
    if summary["status"] == "stopped":
        sys.exit(130 if trainer.interrupted else 143)


@train.command("sft")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="TOML file with SFT settings.")
@json_option("the run summary")
@config_options(SFTConfig, "sft")
@pass_ctx
def sft(ctx: Context, config_file: str | None, as_json: bool, **kw: Any) -> None:
    """SFT (TRL) on stored trajectories with reward >= --min-reward; loss on assistant tokens only."""
    from engine.rl.sft import SFTRun  # loads torch: only when training

    cfg = load_config(SFTConfig, config_file, _overrides(SFTConfig, kw))
    processes = launch_processes(ctx, cfg)
    run_id = _job_run(ctx.store, "sft", cfg) if processes.is_main else None
    _run_sft(SFTRun(ctx.store, cfg, run_id=run_id, processes=processes), as_json)


def _run_sft(run, as_json: bool) -> None:
    if not run.processes.is_main:  # the main process reports for all
        run.train()
        return
    click.echo(f"run {run.run_id}", err=True)
    state = types.SimpleNamespace(bar=None, seen=0)

    def on_progress(step: int, total: int, logs: dict) -> None:
        if state.bar is None:
            state.bar = progress(total, f"sft {run.run_id}")
            state.bar.__enter__()
        state.bar.update(step - state.seen)
        state.seen = step
        if "loss" in logs:
            state.bar.label = f"sft {run.run_id} loss {logs['loss']:.3f}"

    run.on_progress = on_progress
    try:
        summary = run.train()
    finally:
        if state.bar is not None:
            state.bar.__exit__(None, None, None)
    summary["run_id"] = run.run_id
    if as_json:
        emit_json(summary)
    else:
        click.echo(f"{run.run_id}: {summary['examples']} trajectories, {summary['steps']} steps, "
                   f"loss {summary['train_loss']:.4f}; adapter {summary['adapter']}")
    if summary["status"] == "stopped":  # a stop request (SIGTERM); Ctrl-C ends in main() with 130
        sys.exit(143)


