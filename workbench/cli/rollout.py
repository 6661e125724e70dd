"""`sandmle rollout`: one episode of a policy in an environment, stored turn by turn."""

from __future__ import annotations

import click

from engine.agents.policies import load_policy
from engine.agents.scaffolds import get_scaffold
from engine.agents.rollout import run_episode
from engine.config import load_settings
from engine.errors import SandmleError
from engine.eval.mlebench import quota_problem
from engine.eval.select import resolve_env
from engine.grading.rewards import get_scheme
from engine.sandbox import get_backend

from .common import POSITIVE_S, Context, emit_json, json_option, note, pass_ctx
from .sandbox_options import sandbox_options
from .scaffold_options import scaffold_options


@click.command()
@click.option("--env", "env_ref", required=True, help="Stored environment id, environment folder or MLE-bench folder.")
@click.option("--policy", "policy_spec", default="scripted", show_default=True,
              help="Policy spec: scripted[:skill=0.7], hf:PATH[,adapter=DIR], anthropic:MODEL, openai:MODEL.")
@scaffold_options
@click.option("--seed", "rng_seed", type=int, default=0, show_default=True, help="RNG seed of the episode.")
@sandbox_options(timeout_alias="--step-timeout")
@click.option("--episode-timeout", type=POSITIVE_S, default=1200, show_default=True, help="Seconds per episode.")
@click.option("--reward", default="milestone", show_default=True, help="Reward scheme: milestone, sparse, humanrank.")
@click.option("--metric", help="Metric for an MLE-bench folder whose grader name is not recognised (overrides it).")
@click.option("--show", is_flag=True, help="Print every turn (text, code, observation).")
@json_option("the trajectory")
@pass_ctx
def rollout(ctx: Context, env_ref: str, policy_spec: str, scaffold: str, max_turns: int | None, rng_seed: int,
            sandbox_backend: str | None, isolation: str | None, memory_mb: int | None, max_procs: int | None, timeout_s: float | None,
            episode_timeout: float, reward: str, metric: str | None, show: bool, as_json: bool) -> None:
    """Run one episode and store the trajectory, its submission, grade report and reward."""
    sandbox_settings = load_settings().sandbox.override(backend=sandbox_backend, memory_mb=memory_mb,
                                                        max_procs=max_procs, timeout_s=timeout_s,
                                                        isolation=isolation)
    get_scheme(reward)
    env = resolve_env(ctx.store, env_ref, metric=metric, note=note)
    too_big = quota_problem(env, sandbox_settings.max_disk_mb)
    if too_big:
        raise SandmleError(f"{env.id}: {too_big}", hint="raise [sandbox] max_disk_mb or use a machine with more room")
    policy = load_policy(policy_spec, store=ctx.store)
    sandbox = get_backend(store=ctx.store, settings=sandbox_settings)  # one line when it cannot start
    click.echo(f"rollout: {policy.name} · {scaffold} · {env.id}", err=True)
    def progress(turn) -> None:
        lines = (turn.observation or turn.text or "").strip().splitlines()
        head = " ".join(lines[:2])[:100]
        click.echo(f"  {turn.tool or 'format'}: {head}", err=True)

    with sandbox:
        traj = run_episode(env, policy, scaffold=scaffold, sandbox=sandbox, store=ctx.store, rng_seed=rng_seed,
                           max_turns=max_turns or get_scaffold(scaffold).turns, episode_timeout_s=episode_timeout,
                           reward=reward, on_turn=progress)
    if as_json:
        emit_json(traj.to_dict())
        return
    if show:
        for i, t in enumerate(traj.turns):
            click.echo(f"--- [{i}] {t.role}" + (f" · {t.tool}" if t.tool else "")
                       + ("" if t.well_formed is None else (" · well-formed" if t.well_formed else " · MALFORMED")))
            click.echo(t.text if len(t.text) < 3000 else t.text[:1500] + "\n...\n" + t.text[-1500:])
    g = traj.grade or {}
    ending = "answered" if traj.terminated else ("timed out" if traj.timed_out else "out of turns")
    click.echo(f"trajectory {traj.id}: {len(traj.turns)} turns · {ending} · {traj.wall_s:.1f}s "
               f"(sandbox {traj.sandbox_s:.1f}s) · status {traj.status}")
    if g.get("valid_submission"):
        medal = next((m for m in ("gold", "silver", "bronze") if g.get(f"{m}_medal")), "-")
        click.echo(f"  score {g['score']:.6g} · medal {medal} · above median {'yes' if g['above_median'] else 'no'}")
    else:
        click.echo(f"  invalid submission: {g.get('error')}")
    click.echo(f"  reward {traj.reward:.3f} ({reward})" + (f" · error: {traj.error}" if traj.error else ""))
