"""``sandmle bench learn``: the miniature reproduction of the paper's result on a CPU.

1. synthesize environments from a few seeds (procedural backend) and split them by seed: the held-out
   environments come from seeds never used for training;
2. build the tiny model (random init; byte-level BPE on the project's corpus plus macro tokens for the teacher's
   fixed code blocks, see :func:`engine.agents.policies.tiny.macro_tokens`);
3. collect demonstrations from the scripted teacher at mixed skill (right and wrong strategies) in ``react``;
4. SFT (TRL) on the demonstrations that produced a valid submission — the baseline;
5. trajectory-wise GRPO from the SFT adapter on the training environments;
6. evaluate SFT and SFT+GRPO on the held-out environments with the same budget in ``react`` and in the unseen
   ``oneshot`` scaffold: medal rate, valid rate, HumanRank (mean ± SEM over seeds) and the relative gain;
7. plot the GRPO reward curve to ``learn_reward.png`` beside the result file.

Everything runs in a separate store under ``<data dir>/bench/learn-<stamp>/`` so the user's environments and
runs stay clean; a ``bench`` run in the user's store records the summary."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..agents.policies import load_policy
from ..agents.policies.tiny import default_corpus, macro_tokens
from ..agents.prompts import task_prompt
from ..agents.rollout import run_episode
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..eval.run import run_eval
from ..models.tiny import build_tiny_model
from ..rl.config import GRPOConfig, SFTConfig
from ..rl.grpo import GRPOTrainer
from ..rl.sft import SFTRun
from ..sandbox import get_backend
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult


@dataclass
class LearnPlan:
    train_seeds: list[str]
    heldout_seeds: list[str]
    envs_per_seed: int
    demo_skills: tuple[float, ...]
    demos_per_skill: int
    sft_epochs: float
    grpo_steps: int
    envs_per_step: int
    group_size: int
    eval_seeds: list[int]
    max_turns: int = 6
    max_new_tokens: int = 96
    temperature: float = 0.6
    grpo_lr: float = 5e-4
    unseen: str = "oneshot"
    budget_s: float = 40 * 60
    hidden: int = 128
    layers: int = 2
    extra: dict[str, Any] = field(default_factory=dict)


FULL = LearnPlan(train_seeds=["forest-cover", "tabular-binary-manufacturing", "pizza-requests"],
                 heldout_seeds=["leaf-species", "author-style"], envs_per_seed=2, demo_skills=(0.2, 0.6, 1.0),
                 demos_per_skill=1, sft_epochs=10, grpo_steps=16, envs_per_step=2, group_size=4,
                 eval_seeds=[0, 1])
QUICK = LearnPlan(train_seeds=["forest-cover", "pizza-requests"], heldout_seeds=["leaf-species"], envs_per_seed=1,
                  demo_skills=(0.2, 1.0), demos_per_skill=1, sft_epochs=1, grpo_steps=1, envs_per_step=1,
                  group_size=2, eval_seeds=[0], budget_s=12 * 60)


def _log(msg: str) -> None:
    print(f"[learn {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_envs(store, plan: LearnPlan, rng_seed: int) -> tuple[list[str], list[str]]:
    load_shipped(store)
    split: dict[str, list[str]] = {"train": [], "heldout": []}
    for name, seeds in (("train", plan.train_seeds), ("heldout", plan.heldout_seeds)):
        for i, seed_id in enumerate(seeds):
            ids: list[str] = []
            for attempt in range(4):  # synthesis may reject an environment; try fresh RNG seeds
                need = plan.envs_per_seed - len(ids)
                if need <= 0:
                    break
                rep = synthesize(store, seed_id, need,
                                 rng_seed=rng_seed * 1000 + i * 10 + attempt + (500 if name == "heldout" else 0))
                ids += [o.env_id for o in rep.verified]
            _log(f"{seed_id}: {len(ids)}/{plan.envs_per_seed} verified → {name}")
            split[name] += ids
    if not split["train"] or not split["heldout"]:
        raise SandmleError("synthesis produced no training or no held-out environment")
    store.envs.set_split(split["train"], "train")
    store.envs.set_split(split["heldout"], "heldout")
    return split["train"], split["heldout"]


def collect_demos(store, plan: LearnPlan, env_ids: list[str]) -> tuple[str, dict[str, float]]:
    run_id = store.runs.create("rollout", {"policy": "scripted", "skills": list(plan.demo_skills)}, name="demos")
    backend = get_backend(store=store, settings=load_settings().sandbox)
    rewards, medals, valid = [], [], []
    try:
        for env_id in env_ids:
            env = EnvSpec.from_store(store, env_id)
            for skill in plan.demo_skills:
                for k in range(plan.demos_per_skill):
                    tr = run_episode(env, load_policy(f"scripted:skill={skill},seed={k}"), scaffold="react",
                                     sandbox=backend, store=store, run_id=run_id, rng_seed=k,
                                     max_turns=plan.max_turns)
                    g = tr.grade or {}
                    rewards.append(tr.reward)
                    valid.append(float(bool(g.get("valid_submission"))))
                    medals.append(float(bool(g.get("gold_medal") or g.get("silver_medal") or g.get("bronze_medal"))))
    finally:
        backend.close()
    store.runs.finish(run_id, "done")
    n = max(len(rewards), 1)
    return run_id, {"demos": len(rewards), "demo_reward": sum(rewards) / n, "demo_valid": sum(valid) / n,
                    "demo_medal": sum(medals) / n}


def plot_rewards(metrics: dict[str, list[tuple[int, float]]], path: Path, *, sft_medal: float | None = None) -> Path:
    import matplotlib  # heavy: only to draw the reward plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    for name, label in (("reward_mean", "mean reward"), ("medal_rate", "medal rate"), ("valid_rate", "valid rate")):
        pts = metrics.get(name, [])
        if pts:
            ax.plot([s for s, _ in pts], [v for _, v in pts], marker="o", ms=3, label=label)
    if sft_medal is not None:
        ax.axhline(sft_medal, color="grey", ls="--", lw=1, label="SFT held-out medal rate (react)")
    ax.set_xlabel("GRPO step")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("GRPO on the training environments (tiny model, CPU)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _fmt(rate: dict[str, float | None]) -> str:
    mean, sem = rate["mean"], rate["sem"]
    return "n/a" if mean is None else f"{mean:.3f} ± {sem or 0.0:.3f}"


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


def build_model(bs: Store, plan: LearnPlan, root: Path, train_ids: list[str], seed: int) -> Path:
    """The tiny model; its tokenizer learns the training environments' task prompts too (never the held-out ones)."""
    corpus = default_corpus() + [task_prompt(EnvSpec.from_store(bs, e).public) for e in train_ids]
    return build_tiny_model(root / "tiny", corpus=corpus, hidden=plan.hidden, layers=plan.layers,
                            extra_tokens=macro_tokens((plan.max_turns,)), seed=seed, init_std=plan.hidden ** -0.5)


def train_sft(bs: Store, plan: LearnPlan, model_dir: Path, demo_run: str, seed: int) -> tuple[SFTRun, dict[str, Any]]:
    sft = SFTRun(bs, SFTConfig(model=str(model_dir), source_run=demo_run, min_reward=0.2, epochs=plan.sft_epochs,
                               batch_size=2, lr=1e-2, lora_r=16, lora_alpha=32, save_every=10_000,
                               max_seq_len=2048, seed=seed, name="sft", lora_modules_to_save=["norm"]))
    return sft, sft.train()


def train_grpo(bs: Store, plan: LearnPlan, model_dir: Path, sft: SFTRun, sft_adapter: str, seed: int,
               phases: _Phases) -> tuple[GRPOTrainer, dict[str, Any]]:
    """GRPO from the SFT adapter, stopped early when the time budget needs the rest for the evaluations."""
    reserve = 0.45 * plan.budget_s  # leave time for the four evaluations
    cfg = GRPOConfig(model=str(model_dir), adapter=sft_adapter, steps=plan.grpo_steps,
                     envs_per_step=plan.envs_per_step, group_size=plan.group_size, env_split="train",
                     max_turns=plan.max_turns, max_new_tokens=plan.max_new_tokens, lr=plan.grpo_lr, lora_r=16,
                     temperature=plan.temperature,
                     lora_alpha=32, lora_modules_to_save=["norm"], micro_batch=2, max_seq_len=2048,
                     save_every=max(1, plan.grpo_steps // 3), rollout_workers=2,
                     step_timeout_s=120, episode_timeout_s=600, seed=seed, name="grpo")
    trainer = GRPOTrainer(bs, cfg, parent_id=sft.run_id)

    def on_step(step: int, m: dict) -> None:
        phases.log(f"grpo step {step}: reward {m['reward_mean']:.3f} medal {m['medal_rate']:.2f} valid "
                   f"{m['valid_rate']:.2f} skipped {m['skipped_groups']:.0f} ({m['step_s']:.0f}s)")
        if phases.elapsed() > plan.budget_s - reserve:
            phases.log("time budget: stopping GRPO early")
            trainer.request_stop()

    trainer.on_step = on_step
    return trainer, trainer.train()


def evaluate(bs: Store, plan: LearnPlan, model_dir: Path, adapters: dict[str, str], heldout_ids: list[str],
             log: Callable[[str], None]) -> dict[tuple[str, str], Any]:
    """(label, scaffold) → eval report of each adapter on the held-out environments, in react and the unseen one."""
    envs = [EnvSpec.from_store(bs, e) for e in heldout_ids]
    reports: dict[tuple[str, str], Any] = {}
    for label, adapter in adapters.items():
        spec = (f"hf:{model_dir},adapter={adapter},max_new_tokens={plan.max_new_tokens},"
                f"temperature={plan.temperature}")
        for scaffold in ("react", plan.unseen):
            rep = run_eval(bs, spec, envs, scaffold=scaffold, rng_seeds=plan.eval_seeds,
                           max_turns=plan.max_turns if scaffold == "react" else None, step_timeout_s=120,
                           episode_timeout_s=600, workers=2, name=f"{label} {scaffold}")
            reports[(label, scaffold)] = rep
            log(f"eval {label} {scaffold}: medal {_fmt(rep.summary['any_medal'])} valid "
                f"{_fmt(rep.summary['valid'])}")
    return reports


def report_rows(reports: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    rows = []
    for (label, scaffold), rep in reports.items():
        s = rep.summary
        rows.append({"policy": label, "scaffold": scaffold + ("" if scaffold == "react" else " (unseen)"),
                     "episodes": rep.n_episodes, "medal_rate": _fmt(s["any_medal"]),
                     "valid_rate": _fmt(s["valid"]), "human_rank": _fmt(s["human_rank"]),
                     "reward": _fmt(s["reward"])})
    return rows


def gain(reports: dict[tuple[str, str], Any], scaffold: str) -> dict[str, Any]:
    """SFT+GRPO against SFT in one scaffold: medal rates, their ratio and gain, HumanRank difference."""
    a = reports[("SFT", scaffold)].summary["any_medal"]["mean"]
    b = reports[("SFT+GRPO", scaffold)].summary["any_medal"]["mean"]
    hr_a = reports[("SFT", scaffold)].summary["human_rank"]["mean"]
    hr_b = reports[("SFT+GRPO", scaffold)].summary["human_rank"]["mean"]
    return {"sft_medal": a, "grpo_medal": b, "ratio": (b / a) if a > 0 else None,
            "relative_gain": (b / a - 1) if a > 0 else None, "human_rank_delta": hr_b - hr_a}


def run(store, quick: bool = False, *, plan: LearnPlan | None = None, seed: int = 0, workdir: str | None = None,
        results_dir: str | Path, progress: Callable[[str], None] | None = None, **_: Any) -> BenchResult:
    plan = plan or (QUICK if quick else FULL)
    phases = _Phases(progress or _log)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = Path(workdir) if workdir else store.data_dir / "bench" / f"learn-{stamp}"
    root.mkdir(parents=True, exist_ok=True)
    bench_run = store.runs.create("bench", {"bench": "learn", "quick": quick, "plan": asdict(plan),
                                            "workdir": str(root)}, name="bench learn")
    bs = Store(root / "sandmle.db")
    try:
        train_ids, heldout_ids = make_envs(bs, plan, seed)
        phases.end("synthesis")
        phases.begin()
        model_dir = build_model(bs, plan, root, train_ids, seed)
        demo_run, demo_stats = collect_demos(bs, plan, train_ids)
        phases.end("demos")
        phases.log(f"demos: {demo_stats}")
        phases.begin()
        sft, sft_summary = train_sft(bs, plan, model_dir, demo_run, seed)
        phases.end("sft")
        phases.begin()
        trainer, grpo_summary = train_grpo(bs, plan, model_dir, sft, sft_summary["adapter"], seed, phases)
        phases.end("grpo")
        phases.begin()
        reports = evaluate(bs, plan, model_dir, {"SFT": sft_summary["adapter"], "SFT+GRPO": grpo_summary["adapter"]},
                           heldout_ids, phases.log)
        phases.end("eval")

        metrics = bs.runs.metrics(trainer.run_id)
        png = plot_rewards(metrics, Path(results_dir) / ("learn_reward_quick.png" if quick else "learn_reward.png"),
                           sft_medal=reports[("SFT", "react")].summary["any_medal"]["mean"])
        react, unseen = gain(reports, "react"), gain(reports, plan.unseen)
        summary = {
            "react": react, "unseen_scaffold": {"scaffold": plan.unseen, **unseen},
            "target_medal_ratio_1_2_met": bool(react["ratio"] is not None and react["ratio"] >= 1.2),
            "unseen_scaffold_gain": bool(unseen["grpo_medal"] > unseen["sft_medal"]),
            "train_envs": train_ids, "heldout_envs": heldout_ids, **demo_stats,
            "sft_examples": sft_summary["examples"], "sft_loss": round(sft_summary["train_loss"], 4),
            "grpo_steps_done": grpo_summary["steps_done"],
            "grpo_skipped_groups": sum(v for _, v in metrics.get("skipped_groups", [])),
            "grpo_groups": sum(v for _, v in metrics.get("groups", [])),
            "timings_s": phases.timings, "total_s": round(phases.elapsed(), 1), "plot": str(png),
            "store": str(root / "sandmle.db"),
        }
        notes = [
            f"tiny model: Qwen3 hidden {plan.hidden}, {plan.layers} layers, random init (std 1/sqrt(hidden)), LoRA r=16 + final norm; macro tokens for the teacher's "
            "fixed code blocks (see engine/agents/policies/tiny.py)",
            f"held-out environments come from seeds never trained on: {', '.join(plan.heldout_seeds)}",
            f"'{plan.unseen}' was never seen in SFT or GRPO (both trained in react only)",
        ]
        store.runs.finish(bench_run, "done", summary=summary)
        return BenchResult(name="learn", rows=report_rows(reports), summary=summary, notes=notes)
    except BaseException as exc:
        store.runs.finish(bench_run, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        bs.close()
