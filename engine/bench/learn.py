"""``sandmle bench learn``: the miniature reproduction of the paper's result on a CPU, with enough held-out episodes
to tell a gain from noise.

1. synthesize environments from seeds (procedural backend) and split them by seed: the held-out environments come
   from seeds never used for training;
2. the ``tiny`` model — the same one ``--model tiny`` and ``hf:tiny`` use (:mod:`engine.agents.policies.tiny_model`);
3. demonstrations of a mixed teacher on the training environments (:data:`TEACHERS`): on every environment it
   solves the task with a plain linear model (valid, rarely a medal) and with the strong blend of the reference
   solutions (mostly a medal), in ``react``;
4. SFT on the demonstrations that produced a valid submission — the baseline (tiny's recipe);
5. trajectory-wise GRPO from the SFT adapter, in ``react`` only (tiny's recipe);
6. SFT and SFT+GRPO on the held-out environments with the same budget and the same RNG seeds, in ``react`` and in
   ``oneshot``, a scaffold neither stage saw; per scaffold the paired difference SFT+GRPO − SFT of the medal rate
   with a bootstrap 95% interval over environments (:func:`engine.eval.compare.compare`);
7. the GRPO reward curve as a PNG beside the result file.

Everything runs in a separate store under ``<data dir>/bench/learn-<stamp>/`` so the user's environments and runs
stay clean; a ``bench`` run in the user's store records the summary."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..agents.policies import tiny_model as tiny
from ..agents.policies.scripted import EXPERT
from ..agents.policies.templates import Choice
from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..eval.compare import compare
from ..eval.run import EvalReport, run_eval
from ..models.adapters import final_adapter
from ..rl.config import GRPOConfig, SFTConfig, load_config
from ..rl.grpo import GRPOTrainer
from ..rl.sft import SFTRun
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult, torch_threads
from ._plot import line_plot
from ._vllm import tiny_server

#: the policies compared (baseline first) and the rate compared
ARMS = ("SFT", "SFT+GRPO")
RATE = "any_medal"
#: the mixed teacher: a wrong and a right strategy, one demonstration each per environment. SFT learns the format
#: from both and samples either; which one earns medals is what GRPO has to find out from the reward. (A teacher
#: mostly right leaves SFT sampling its majority strategy at temperature 0.6, and nothing for GRPO to learn; one
#: choosing among all 32 strategies at random is more than a 1M-parameter model copies reliably.)
TEACHERS = (f"scripted:strategy={Choice('linear', 'words', False, False).key}", f"scripted:strategy={EXPERT.key}")


@dataclass(frozen=True)
class LearnPlan:
    train_seeds: tuple[str, ...]
    heldout_seeds: tuple[str, ...]
    train_envs_per_seed: int
    heldout_envs_per_seed: int
    #: demonstrations of each teacher per training environment (the teachers are deterministic: copies weigh them)
    demos_per_teacher: int
    sft_epochs: float
    grpo_steps: int
    eval_seeds: tuple[int, ...]
    unseen: str = "oneshot"
    workers: int = 2
    n_boot: int = 2000
    budget_s: float = 40 * 60

    @property
    def episodes_per_arm(self) -> int:
        return len(self.heldout_seeds) * self.heldout_envs_per_seed * len(self.eval_seeds)


FULL = LearnPlan(train_seeds=("forest-cover", "tabular-binary-manufacturing", "pizza-requests", "toxic-comments",
                              "essay-scoring", "cactus-aerial", "conductor-properties"),
                 heldout_seeds=("leaf-species", "author-style", "taxi-fare"), train_envs_per_seed=2,
                 heldout_envs_per_seed=4, demos_per_teacher=2,
                 sft_epochs=4, grpo_steps=16, eval_seeds=(0, 1, 2, 3))
QUICK = LearnPlan(train_seeds=("forest-cover", "pizza-requests"), heldout_seeds=("leaf-species",),
                  train_envs_per_seed=1, heldout_envs_per_seed=1, demos_per_teacher=1, sft_epochs=1, grpo_steps=1,
                  eval_seeds=(0,),
                  n_boot=200, budget_s=12 * 60)


def _log(msg: str) -> None:
    print(f"[learn {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_envs(store: Store, plan: LearnPlan, rng_seed: int, log: Callable[[str], None] = _log
              ) -> tuple[list[str], list[str]]:
    """Synthesize the training and held-out environments (by seed) and record their splits."""
    load_shipped(store)
    split: dict[str, list[str]] = {"train": [], "heldout": []}
    for name, seeds, per_seed in (("train", plan.train_seeds, plan.train_envs_per_seed),
                                  ("heldout", plan.heldout_seeds, plan.heldout_envs_per_seed)):
        for i, seed_id in enumerate(seeds):
            ids: list[str] = []
            for attempt in range(4):  # synthesis may reject an environment; try fresh RNG seeds
                if len(ids) >= per_seed:
                    break
                rep = synthesize(store, seed_id, per_seed - len(ids),
                                 rng_seed=rng_seed * 1000 + i * 10 + attempt + (500 if name == "heldout" else 0))
                ids += [o.env_id for o in rep.verified]
            log(f"{seed_id}: {len(ids)}/{per_seed} verified → {name}")
            split[name] += ids
    if not split["train"] or not split["heldout"]:
        raise SandmleError("synthesis produced no training or no held-out environment")
    store.envs.set_split(split["train"], "train")
    store.envs.set_split(split["heldout"], "heldout")
    return split["train"], split["heldout"]


def collect_demos(store: Store, plan: LearnPlan, env_ids: list[str]) -> dict[str, float]:
    """Each teacher in react on every training environment (one eval run each, so its rates are stored too)."""
    envs = [EnvSpec.from_store(store, e) for e in env_ids]
    reports = [run_eval(store, teacher, envs, rng_seeds=list(range(plan.demos_per_teacher)),
                        max_turns=tiny.MAX_TURNS, workers=plan.workers, name=f"demos {teacher}")
               for teacher in TEACHERS]
    n = sum(r.n_episodes for r in reports)
    return {"demos": n, **{f"demo_{rate}": sum((r.summary[rate]["mean"] or 0.0) * r.n_episodes for r in reports) / n
                           for rate in ("reward", "valid", RATE)}}


def plot_rewards(metrics: dict[str, list[tuple[int, float]]], path: Path, *, sft_medal: float | None = None) -> Path:
    names = (("reward_mean", "mean reward"), ("medal_rate", "medal rate"), ("valid_rate", "valid rate"))
    return line_plot({label: metrics[name] for name, label in names if metrics.get(name)},
                     path, title="GRPO on the training environments (tiny model, CPU)",
                     hline=None if sft_medal is None else (sft_medal, "SFT held-out medal rate (react)"))


def _fmt(rate: dict[str, float | None]) -> str:
    mean, sem = rate["mean"], rate["sem"]
    return "n/a" if mean is None else f"{mean:.3f} ± {sem or 0.0:.3f}"


def scaffold_result(store: Store, sft: EvalReport, grpo: EvalReport, plan: LearnPlan, target_ratio: float
                    ) -> dict[str, Any]:
    """The paired comparison of one scaffold's two arms, and whether its target is met."""
    cmp = compare(store, sft.run_id, grpo.run_id, RATE, n_boot=plan.n_boot, seed=0)
    a, b = sft.summary[RATE]["mean"] or 0.0, grpo.summary[RATE]["mean"] or 0.0
    ratio = b / a if a > 0 else None
    excludes_0 = cmp.interval.low > 0 or cmp.interval.high < 0
    return {"episodes_per_arm": cmp.n_pairs, "environments": len(cmp.per_env), "sft_medal": a, "grpo_medal": b,
            "ratio": ratio, "diff": cmp.diff, "ci95_low": cmp.interval.low, "ci95_high": cmp.interval.high,
            "interval_excludes_0": excludes_0, "target_ratio": target_ratio,
            "target_met": bool(ratio is not None and ratio >= target_ratio),
            "human_rank_delta": (grpo.summary["human_rank"]["mean"] or 0.0)
            - (sft.summary["human_rank"]["mean"] or 0.0),
            "per_env": [{"env_id": e.env_id, "sft": e.a, "grpo": e.b, "diff": e.diff} for e in cmp.per_env]}


class _Phases:
    """Wall time of each phase of the benchmark, logged as it ends."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self.start = self._t0 = time.monotonic()
        self.timings: dict[str, float] = {}

    def begin(self) -> None:
        self._t0 = time.monotonic()

    def end(self, name: str) -> None:
        self.timings[name] = round(time.monotonic() - self._t0, 1)
        self.log(f"{name}: {self.timings[name]:.0f}s (total {self.elapsed():.0f}s)")

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def train_sft(bs: Store, plan: LearnPlan, seed: int) -> tuple[SFTRun, dict[str, Any]]:
    """SFT with tiny's recipe on every valid demonstration of the training split."""
    sft = SFTRun(bs, load_config(SFTConfig, None, {"model": tiny.NAME, "source_policy": "scripted",
                                                   "epochs": plan.sft_epochs, "save_every": 10_000, "seed": seed,
                                                   "name": "sft"}))
    return sft, sft.train()


def train_grpo(bs: Store, plan: LearnPlan, sft: SFTRun, seed: int, phases: _Phases, sampler: str = "hf"
               ) -> tuple[GRPOTrainer, dict[str, Any]]:
    """GRPO with tiny's recipe from the SFT adapter, stopped early when the time budget needs the rest for the
    evaluations; ``sampler = "vllm"``: sampling from a real vLLM server started for it (tiny's recipe with vLLM)."""
    if sampler == "vllm":
        server, why = tiny_server(bs, sft.run_id, bs.data_dir / "vllm")
        if server is None:
            raise SandmleError(f"bench learn --sampler vllm: {why}")
        phases.log(f"vLLM server started in {server.startup_s:.0f}s")
        try:
            return _grpo(bs, plan, sft, seed, phases, {"sampler": "vllm", "sampler_url": server.url})
        finally:
            server.stop()
    return _grpo(bs, plan, sft, seed, phases, {})


def _grpo(bs: Store, plan: LearnPlan, sft: SFTRun, seed: int, phases: _Phases, sampling: dict[str, Any]
          ) -> tuple[GRPOTrainer, dict[str, Any]]:
    cfg = load_config(GRPOConfig, None, {"model": tiny.NAME, "adapter": sft.run_id, "steps": plan.grpo_steps,
                                         "seed": seed, "name": "grpo", **sampling})
    # every rollout of a step in flight at once: their model calls share the sampler's batches
    trainer = GRPOTrainer(bs, replace(cfg, rollout_workers=cfg.envs_per_step * cfg.group_size),
                          parent_id=sft.run_id)
    reserve = 0.35 * plan.budget_s  # what the four evaluations need

    def on_step(step: int, m: dict) -> None:
        phases.log(f"grpo step {step}: reward {m['reward_mean']:.3f} medal {m['medal_rate']:.2f} valid "
                   f"{m['valid_rate']:.2f} skipped {m['skipped_groups']:.0f} kl {m['kl']:.4f} ({m['step_s']:.0f}s)")
        if phases.elapsed() > plan.budget_s - reserve:
            phases.log("time budget: stopping GRPO early")
            trainer.request_stop()

    trainer.on_step = on_step
    trainer.on_warning = lambda text: phases.log(f"warning: {text}")
    return trainer, trainer.train()


def evaluate(bs: Store, plan: LearnPlan, model_dir: Path, runs: dict[str, str], heldout_ids: list[str],
             log: Callable[[str], None]) -> dict[tuple[str, str], EvalReport]:
    """(arm, scaffold) → eval report of each arm's final adapter on the held-out environments, with the same RNG
    seeds, in react and in the unseen scaffold."""
    envs = [EnvSpec.from_store(bs, e) for e in heldout_ids]
    sampling = f"temperature={tiny.TEMPERATURE},max_new_tokens={tiny.MAX_NEW_TOKENS}"
    reports: dict[tuple[str, str], EvalReport] = {}
    for label, run_id in runs.items():
        # folders, not names (`tiny` and run ids resolve in the user's data dir), sampling as hf:tiny does
        spec = f"hf:{model_dir},adapter={final_adapter(bs, run_id)},{sampling}"
        for scaffold in ("react", plan.unseen):
            rep = run_eval(bs, spec, envs, scaffold=scaffold, rng_seeds=list(plan.eval_seeds),
                           max_turns=tiny.MAX_TURNS if scaffold == "react" else None, workers=plan.workers,
                           name=f"{label} {scaffold}")
            reports[(label, scaffold)] = rep
            log(f"eval {label} {scaffold}: medal {_fmt(rep.summary[RATE])} valid {_fmt(rep.summary['valid'])}")
    return reports


def report_rows(reports: dict[tuple[str, str], EvalReport]) -> list[dict[str, Any]]:
    return [{"policy": label, "scaffold": scaffold + ("" if scaffold == "react" else " (unseen)"),
             "episodes": rep.n_episodes, "medal_rate": _fmt(rep.summary[RATE]),
             "valid_rate": _fmt(rep.summary["valid"]),
             "human_rank": _fmt(rep.summary["human_rank"]), "reward": _fmt(rep.summary["reward"])}
            for (label, scaffold), rep in reports.items()]


def run(store: Store, quick: bool = False, *, plan: LearnPlan | None = None, seed: int = 0,
        workdir: str | None = None, results_dir: str | Path, progress: Callable[[str], None] | None = None,
        sampler: str = "hf", **_: Any) -> BenchResult:
    plan = plan or (QUICK if quick else FULL)
    phases = _Phases(progress or _log)
    root = Path(workdir) if workdir else store.data_dir / "bench" / f"learn-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True, exist_ok=True)
    bench_run = store.runs.create("bench", {"bench": "learn", "quick": quick, "plan": asdict(plan),
                                            "workdir": str(root)}, name="bench learn")
    bs = Store(root / "sandmle.db")
    try:
        with torch_threads(1):  # see torch_threads: the tiny model on a shared CPU
            train_ids, heldout_ids = make_envs(bs, plan, seed, phases.log)
            phases.end("synthesis")
            phases.begin()
            model_dir = tiny.ensure(bs.data_dir)
            demo_stats = collect_demos(bs, plan, train_ids)
            phases.end("demos")
            phases.log(f"demos: {demo_stats}")
            phases.begin()
            sft, sft_summary = train_sft(bs, plan, seed)
            phases.end("sft")
            phases.begin()
            trainer, grpo_summary = train_grpo(bs, plan, sft, seed, phases, sampler)
            phases.end("grpo")
            phases.begin()
            reports = evaluate(bs, plan, model_dir, {"SFT": sft.run_id, "SFT+GRPO": trainer.run_id}, heldout_ids,
                               phases.log)
            phases.end("eval")

            react = scaffold_result(bs, reports[("SFT", "react")], reports[("SFT+GRPO", "react")], plan, 1.2)
            react["target_met"] = react["target_met"] and react["ci95_low"] > 0  # and the interval excludes 0
            unseen = scaffold_result(bs, reports[("SFT", plan.unseen)], reports[("SFT+GRPO", plan.unseen)], plan, 1.1)
            metrics = bs.runs.metrics(trainer.run_id)
            suffix = ("_quick" if quick else "") + ("" if sampler == "hf" else f"_{sampler}")
            png = plot_rewards(metrics, Path(results_dir) / f"learn_reward{suffix}.png", sft_medal=react["sft_medal"])
            summary = {
                "episodes_per_arm": plan.episodes_per_arm, "react": react,
                "unseen_scaffold": {"scaffold": plan.unseen, **unseen},
                "train_envs": train_ids, "heldout_envs": heldout_ids, "heldout_seeds": list(plan.heldout_seeds),
                **demo_stats, "sft_examples": sft_summary["examples"], "sft_loss": round(sft_summary["train_loss"], 4),
                "grpo_steps_done": grpo_summary["steps_done"], "grpo_warnings": grpo_summary["warnings"],
                "grpo_skipped_groups": sum(v for _, v in metrics.get("skipped_groups", [])),
                "grpo_groups": sum(v for _, v in metrics.get("groups", [])),
                "timings_s": phases.timings, "total_s": round(phases.elapsed(), 1), "plot": png.name,
                "store": str(root / "sandmle.db"),
            }
            notes = [
                f"tiny model (hidden {tiny.HIDDEN}, {tiny.LAYERS} layers, macro tokens) and its training recipe "
                "(engine/rl/recipe.py): the same as `--model tiny`",
                f"held-out environments come from seeds never trained on: {', '.join(plan.heldout_seeds)}",
                f"'{plan.unseen}' was never seen in SFT or GRPO (both trained in react only)",
                f"paired difference of the medal rate over (environment, RNG seed) pairs; 95% interval: "
                f"{plan.n_boot} bootstrap resamples of environments and of pairs within them",
            ]
            if sampler != "hf":
                notes.append(f"GRPO sampled from a real vLLM server ({sampler}; vLLM built for CPU, float32): tiny's "
                             "recipe with vLLM keeps the norms SFT trained frozen (served merged into the base)")
            store.runs.finish(bench_run, "done", summary=summary)
            return BenchResult(name="learn", rows=report_rows(reports), summary={**summary, "grpo_sampler": sampler},
                               notes=notes, variant=None if sampler == "hf" else sampler)
    except BaseException as exc:
        store.runs.finish(bench_run, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        bs.close()
