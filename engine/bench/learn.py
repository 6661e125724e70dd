"""``sandmle bench learn``: the miniature reproduction of the paper's two results on a CPU — GRPO beats SFT on
held-out environments, and RL in one scaffold helps in scaffolds it never ran in — with enough held-out episodes
to tell a gain from noise.

1. synthesize environments from seeds (procedural backend) and split them by seed: the held-out environments come
   from seeds never used for training;
2. the ``tiny`` model — the same one ``--model tiny`` and ``hf:tiny`` use (:mod:`engine.agents.tiny`);
3. the **instruct base**: a first stage that trains every weight of tiny on demonstrations in every scaffold
   (react, aide, oneshot) by a teacher drawing its strategy uniformly (:data:`INSTRUCT_TEACHER`: the format
   everywhere, no preference for what wins) — the analogue of the paper's instruction-tuned base, which can act in
   any scaffold before RL;
4. demonstrations of a mixed teacher on the training environments (:data:`TEACHERS`): on every environment it
   solves the task with a plain linear model (valid, rarely a medal) and with the strong blend of the reference
   solutions (mostly a medal), in ``react`` only;
5. SFT of a fresh adapter on the instruct base, on those react demonstrations with a valid submission — the
   baseline (tiny's recipe);
6. trajectory-wise GRPO from the SFT adapter, in ``react`` only (tiny's recipe);
7. SFT and SFT+GRPO on the held-out environments with the same budget and the same RNG seeds in every scaffold —
   react (trained in) and aide and oneshot (neither SFT nor GRPO ran there) — and on the real held-out suite; per
   group and scaffold the paired difference SFT+GRPO − SFT of the medal rate and SFT+GRPO − the best constant, each
   with the cluster sign-flip test and a verdict (:mod:`engine.bench.learn_groups`, :mod:`engine.eval.cluster`:
   seeds or datasets are the independent units); the rank on the board beside them;
8. the GRPO reward curve as a PNG beside the result file.

**Runs.** ``--runs N`` (default ``LearnPlan.runs``: 3, 1 with ``--quick``) is declared before anything runs (the
``bench`` run's config records it and the RNG seeds): the whole plan runs N times, run i at RNG seed ``seed + i −
1`` (:func:`run_seeds`); every run is reported (``summary.per_run``, the table's rows) and the flags are computed
over all of them, each run weighing the same — never the best of several.

Each run has a separate store under ``<data dir>/bench/learn-<stamp>/run-<i>/`` so the user's environments and runs
stay clean; a ``bench`` run in the user's store records the summary."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..agents import tiny
from ..agents.policies.scripted import EXPERT
from ..agents.templates import Choice
from ..envs.layout import EnvSpec
from ..errors import SandmleError
from ..eval.constants import cache_dir, constants_of
from ..eval.realsuite import build_suite, suite_entries, suite_envs
from ..eval.run import EvalReport, run_eval
from ..inference.base import SamplerError
from ..models.adapters import final_adapter
from ..rl.config import GRPOConfig, SFTConfig, load_config
from ..rl.grpo import GRPOTrainer
from ..rl.sft import SFTRun
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult, torch_threads
from ._plot import line_plot
from .learn_claims import RATE, TRAINED_IN, _fmt, _mean, arm_figures, learn_claims, per_env
from .learn_groups import LEVEL, METHOD, Pair, claim_rows, groups_summary, paired_episodes
from ._vllm import log_path, tiny_server

#: the policies compared (baseline first); the rate compared (RATE) and the scaffold SFT and GRPO train in
#: (TRAINED_IN; the others of :data:`SCAFFOLDS` are the ones they never ran in) are :mod:`.learn_claims`'
ARMS = ("SFT", "SFT+GRPO")
SCAFFOLDS = ("react", "aide", "oneshot")
#: the mixed teacher: a wrong and a right strategy, one demonstration each per environment. SFT learns the format
#: from both and samples either; which one earns medals is what GRPO has to find out from the reward. (A teacher
#: mostly right leaves SFT sampling its majority strategy at temperature 0.6, and nothing for GRPO to learn; one
#: choosing among all 32 strategies at random is more than a 1M-parameter model copies reliably.)
TEACHERS = (f"scripted:strategy={Choice('linear', 'words', False, False).key}", f"scripted:strategy={EXPERT.key}")
#: the instruct stage's teacher: every decision drawn uniformly from the 32 strategies (skill 0), in every scaffold
INSTRUCT_TEACHER = "scripted:skill=0"
#: the SFT stage reads only the mixed teacher's trajectories (its policies are named "scripted:skill=1,strategy=...")
SFT_SOURCE = "scripted:skill=1"
#: the reading teacher (``--plan reading``): both of the mixed teacher's strategies tried on the validation split
#: and the better one by the score tool's numbers trained on all rows — a policy that reads its observations.
#: On grounded environments of the training seeds which of the two earns a medal depends on the task (measured
#: with `sandmle eval constants` on 12 of them: best constant 0.750, per-task oracle 0.917, this teacher 0.833)
READING_TEACHER = f"scripted:candidates={TEACHERS[0].split('=', 1)[1]}:{TEACHERS[1].split('=', 1)[1]}"


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
    #: the instruct stage: episodes of its teacher per training environment in each scaffold (RNG seeds
    #: 0..n-1), and full fine-tuning's epochs and learning rate (LoRA on the random-init model, at tiny's recipe,
    #: reached a loss of ~2 in 3 epochs and wrote garbled scripts; every weight trained: ~0.5)
    instruct_demos: int = 2
    instruct_epochs: float = 3
    instruct_lr: float = 1e-3
    #: SFT's learning rate on the instruct base (tiny's recipe has 1e-2, for random weights): chosen on environments
    #: of the training seeds — at 1e-2 the react-only SFT overwrote the other formats (aide and oneshot valid 0 of
    #: 6 each), at 2e-3 they stayed (6 of 6 each) and the strategy SFT learned in react carried over to them
    sft_lr: float = 2e-3
    #: the scaffolds evaluated (react is the one trained in; an empty instruct stage when only react)
    scaffolds: tuple[str, ...] = SCAFFOLDS
    #: tree nodes of an aide episode (demonstrations and evaluations alike)
    aide_steps: int = 4
    workers: int = 2
    #: whole runs of the plan (``--runs``), each at its own RNG seed (:func:`run_seeds`); the time budget is per run
    runs: int = 3
    budget_s: float = 40 * 60
    #: the real held-out suite's tasks evaluated (``envs real-suite --only``; None: all of heldout.toml) and the RNG
    #: seeds of their episodes
    real_tasks: str | None = None
    real_eval_seeds: tuple[int, ...] = (0,)
    #: the synthesis backend of the training and held-out environments
    backend: str = "procedural"
    #: the demonstrations' teachers (react) and the turn budget of a react episode (demonstrations, GRPO, evals)
    teachers: tuple[str, ...] = TEACHERS
    react_turns: int = tiny.MAX_TURNS

    def __post_init__(self) -> None:
        unseen = set(self.heldout_seeds) - set(tiny.HELDOUT_SEEDS)
        if unseen or set(self.train_seeds) & set(tiny.HELDOUT_SEEDS):
            raise ValueError(f"a learn plan holds out only seeds whose text tiny's tokenizer never read "
                             f"({', '.join(tiny.HELDOUT_SEEDS)}) and trains on none of them")

    @property
    def episodes_per_arm(self) -> int:
        return len(self.heldout_seeds) * self.heldout_envs_per_seed * len(self.eval_seeds)

    def turns(self, scaffold: str) -> int:
        """The turn budget of an episode: react's model calls, aide's tree nodes, oneshot's one script."""
        return {"react": self.react_turns, "aide": self.aide_steps}.get(scaffold, 1)


FULL = LearnPlan(train_seeds=("forest-cover", "tabular-binary-manufacturing", "pizza-requests", "toxic-comments",
                              "essay-scoring", "cactus-aerial", "conductor-properties"),
                 heldout_seeds=tiny.HELDOUT_SEEDS, train_envs_per_seed=2,
                 heldout_envs_per_seed=4, demos_per_teacher=2,
                 sft_epochs=4, grpo_steps=16, eval_seeds=(0, 1, 2, 3))
QUICK = LearnPlan(train_seeds=("forest-cover", "pizza-requests"), heldout_seeds=("leaf-species",),
                  train_envs_per_seed=1, heldout_envs_per_seed=1, demos_per_teacher=1, sft_epochs=1, grpo_steps=1,
                  eval_seeds=(0,), instruct_demos=1, instruct_epochs=1, aide_steps=2,
                  runs=1, budget_s=12 * 60, real_tasks="Pima.te,sklearn:wine", real_eval_seeds=(0,))
#: ``--plan reading``: a miniature where reading the task pays. Training and held-out environments grounded in real
#: datasets (the offline default backend; none of the real suite's), on which the value of the options depends on
#: the task; one teacher that reads (:data:`READING_TEACHER`), so SFT copies validate-both-then-choose and GRPO
#: is rewarded for choosing by the numbers it read; 8 react turns (explore, two validation runs and their scores,
#: the final run, the answer); react only (the instruct stage in react alone). SFT at the full plan's learning
#: rate (2e-3) on the instruct base: at tiny's own 1e-2 GRPO's rollouts on the training environments were valid in
#: 0-25% of each of 15 steps (at 2e-3: 0% at the first step, 50-100% from the third). 48 GRPO steps, not the full
#: plan's 16: in the 16-step run (learn_reward_reading.png, the training environments' curve) the rollouts took
#: 11 steps to be valid every time and medalled in 0-25% of each step after that, against 75% for the best constant
#: and 83% for the teacher on environments of the training seeds: the steps ran out while GRPO was still choosing
READING = replace(FULL, heldout_envs_per_seed=3, eval_seeds=(0, 1), scaffolds=(TRAINED_IN,), backend="grounded",
                  teachers=(READING_TEACHER,), react_turns=8, grpo_steps=48)
#: the plans ``sandmle bench learn --plan NAME`` runs (the result of another than full goes to learn-NAME.json)
PLANS = {"full": FULL, "reading": READING}


def _quick_sizes() -> dict[str, Any]:
    """What ``--quick`` makes small in any plan (the quick plan's sizes, the plan's own choices kept)."""
    keep = ("train_seeds", "heldout_seeds", "train_envs_per_seed", "heldout_envs_per_seed", "demos_per_teacher",
            "sft_epochs", "grpo_steps", "eval_seeds", "instruct_demos", "instruct_epochs", "aide_steps", "runs",
            "budget_s", "real_tasks", "real_eval_seeds")
    return {k: getattr(QUICK, k) for k in keep}


def _log(msg: str) -> None:
    print(f"[learn {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_envs(store: Store, plan: LearnPlan, rng_seed: int, log: Callable[[str], None] = _log
              ) -> tuple[list[str], list[str]]:
    """Synthesize the training and held-out environments (by seed) and record their splits."""
    load_shipped(store)
    split: dict[str, list[str]] = {"train": [], "heldout": []}
    for name, seeds, per_seed in (("train", plan.train_seeds, plan.train_envs_per_seed),
                                  ("heldout", plan.heldout_seeds, plan.heldout_envs_per_seed)):
        # a held-out environment never comes from a real dataset a training environment came from
        avoid = sources(store, split["train"]) if name == "heldout" else []
        for i, seed_id in enumerate(seeds):
            ids: list[str] = []
            for attempt in range(4):  # synthesis may reject an environment; try fresh RNG seeds
                if len(ids) >= per_seed:
                    break
                rep = synthesize(store, seed_id, per_seed - len(ids), backend=plan.backend, avoid_sources=avoid,
                                 rng_seed=rng_seed * 1000 + i * 10 + attempt + (500 if name == "heldout" else 0))
                ids += [o.env_id for o in rep.verified]
            log(f"{seed_id}: {len(ids)}/{per_seed} verified → {name}")
            split[name] += ids
    if not split["train"] or not split["heldout"]:
        raise SandmleError("synthesis produced no training or no held-out environment")
    store.envs.set_split(split["train"], "train")
    store.envs.set_split(split["heldout"], "heldout")
    return split["train"], split["heldout"]


def sources(store: Store, env_ids: list[str]) -> list[str]:
    """The real datasets (catalog keys) the environments came from (grounded ones; none for the others)."""
    keys = {(store.envs.get(e).get("scenario") or {}).get("source_dataset") for e in env_ids}
    return sorted(str(k) for k in keys if k)


def _demo_stats(reports: list[EvalReport], prefix: str) -> dict[str, float]:
    n = sum(r.n_episodes for r in reports)
    return {prefix: n, **{f"{prefix}_{rate}": sum((r.summary[rate]["mean"] or 0.0) * r.n_episodes for r in reports)
                          / max(n, 1) for rate in ("reward", "valid", RATE)}}


def collect_demos(store: Store, plan: LearnPlan, env_ids: list[str]) -> dict[str, float]:
    """Each teacher in react on every training environment (one eval run each, so its rates are stored too)."""
    envs = [EnvSpec.from_store(store, e) for e in env_ids]
    reports = [run_eval(store, teacher, envs, rng_seeds=list(range(plan.demos_per_teacher)),
                        max_turns=plan.turns(TRAINED_IN), workers=plan.workers, name=f"demos {teacher}")
               for teacher in plan.teachers]
    return _demo_stats(reports, "demos")


def collect_instruct_demos(store: Store, plan: LearnPlan, env_ids: list[str]) -> dict[str, Any]:
    """The instruct teacher in every scaffold on every training environment; per scaffold its rates."""
    envs = [EnvSpec.from_store(store, e) for e in env_ids]
    reports = {scaffold: run_eval(store, INSTRUCT_TEACHER, envs, scaffold=scaffold,
                                  rng_seeds=list(range(plan.instruct_demos)), max_turns=plan.turns(scaffold),
                                  workers=plan.workers, name=f"instruct demos {scaffold}")
               for scaffold in plan.scaffolds}
    return {**_demo_stats(list(reports.values()), "instruct_demos"),
            "instruct_demos_per_scaffold": {s: _demo_stats([r], "demos") for s, r in reports.items()}}


def plot_rewards(metrics: dict[str, list[tuple[int, float]]], path: Path, *, sft_medal: float | None = None) -> Path:
    names = (("reward_mean", "mean reward"), ("medal_rate", "medal rate"), ("valid_rate", "valid rate"))
    return line_plot({label: metrics[name] for name, label in names if metrics.get(name)},
                     path, title="GRPO on the training environments (tiny model, CPU)",
                     hline=None if sft_medal is None else (sft_medal, "SFT held-out medal rate (react)"))


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
        self._t0 = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def train_sft(bs: Store, plan: LearnPlan, seed: int, *, model: str = tiny.NAME, source: str = "scripted",
              scaffold: str | None = None, name: str = "sft", **settings: Any) -> tuple[SFTRun, dict[str, Any]]:
    """SFT with tiny's recipe (``settings`` override it) on every valid demonstration of the training split by
    ``source`` (in ``scaffold``; default: every scaffold), a fresh adapter on ``model``."""
    sft = SFTRun(bs, load_config(SFTConfig, None, {"model": model, "source_policy": source, "scaffold": scaffold,
                                                   "epochs": plan.sft_epochs, "save_every": 10_000, "seed": seed,
                                                   "name": name, **settings}))
    return sft, sft.train()


def build_instruct_base(bs: Store, plan: LearnPlan, seed: int) -> tuple[Path, dict[str, Any]]:
    """The instruct base: every weight of tiny trained on the instruct teacher's demonstrations in every scaffold
    (a model folder of its own; its ``sandmle.json`` keeps tiny's recipe for the stages on top of it). Tokens no
    demonstration contains get a zero embedding: random-init rows were noise in prompts full of names the training
    seeds never had (leaf-species: 239 of its prompt's 1,153 tokens; its react valid rate went 0/4 → 1/4, oneshot
    2/4 → 4/4 on one environment)."""
    _, summary = train_sft(bs, plan, seed, source=INSTRUCT_TEACHER, name="instruct", full_finetune=True,
                           zero_unseen_tokens=True, epochs=plan.instruct_epochs, lr=plan.instruct_lr)
    return Path(summary["model"]), {"instruct_examples": summary["examples"],
                                    "instruct_loss": round(summary["train_loss"], 4)}


def train_grpo(bs: Store, plan: LearnPlan, sft: SFTRun, seed: int, phases: _Phases, sampler: str = "hf", *,
               model: str = tiny.NAME, vllm_log: Path | None = None) -> tuple[GRPOTrainer, dict[str, Any]]:
    """GRPO with tiny's recipe from the SFT adapter on ``model``, stopped early when the time budget needs the rest
    for the evaluations; ``sampler = "vllm"``: sampling from a real vLLM server started for it (tiny's recipe with
    vLLM; its log: ``vllm_log``, by default under the bench store's data dir)."""
    if sampler == "vllm":
        server, why = tiny_server(bs, sft.run_id, bs.data_dir / "vllm", vllm_log or log_path(bs, "learn"),
                                  model_dir=None if model == tiny.NAME else Path(model))
        if server is None:
            raise SandmleError(f"bench learn --sampler vllm: {why}")
        phases.log(f"vLLM server started in {server.startup_s:.0f}s")
        try:
            return _grpo(bs, plan, sft, seed, phases, model, {"sampler": "vllm", "sampler_url": server.url})
        except SamplerError as exc:
            raise server.explain(exc) from None
        finally:
            server.stop()
    return _grpo(bs, plan, sft, seed, phases, model, {})


def _grpo(bs: Store, plan: LearnPlan, sft: SFTRun, seed: int, phases: _Phases, model: str, sampling: dict[str, Any]
          ) -> tuple[GRPOTrainer, dict[str, Any]]:
    cfg = load_config(GRPOConfig, None, {"model": model, "adapter": sft.run_id, "steps": plan.grpo_steps,
                                         "seed": seed, "name": "grpo", "scaffold": TRAINED_IN,
                                         "max_turns": plan.turns(TRAINED_IN), **sampling})
    # every rollout of a step in flight at once: their model calls share the sampler's batches
    trainer = GRPOTrainer(bs, replace(cfg, rollout_workers=cfg.envs_per_step * cfg.group_size),
                          parent_id=sft.run_id)
    reserve = 0.12 * plan.budget_s * len(plan.scaffolds)  # what the evaluations need

    def on_step(step: int, m: dict) -> None:
        phases.log(f"grpo step {step}: reward {m['reward_mean']:.3f} medal {m['medal_rate']:.2f} valid "
                   f"{m['valid_rate']:.2f} skipped {m['skipped_groups']:.0f} kl {m['kl']:.4f} ({m['step_s']:.0f}s)")
        if phases.elapsed() > plan.budget_s - reserve:
            phases.log("time budget: stopping GRPO early")
            trainer.request_stop()

    trainer.on_step = on_step
    trainer.on_warning = lambda text: phases.log(f"warning: {text}")
    return trainer, trainer.train()


def evaluate(bs: Store, plan: LearnPlan, model_dir: Path, runs: dict[str, str], envs: list[EnvSpec],
             log: Callable[[str], None], *, seeds: tuple[int, ...] | None = None, group: str = "unseen_synthetic"
             ) -> dict[tuple[str, str], EvalReport]:
    """(arm, scaffold) → eval report of each arm's final adapter on ``envs`` (one group), with the same RNG seeds
    (default: the plan's), in every scaffold of the plan."""
    seeds = seeds or plan.eval_seeds
    sampling = f"temperature={tiny.TEMPERATURE},max_new_tokens={tiny.MAX_NEW_TOKENS}"
    reports: dict[tuple[str, str], EvalReport] = {}
    for label, run_id in runs.items():
        # folders, not names (`tiny` and run ids resolve in the user's data dir), sampling as hf:tiny does
        spec = f"hf:{model_dir},adapter={final_adapter(bs, run_id)},{sampling}"
        for scaffold in plan.scaffolds:
            rep = run_eval(bs, spec, envs, scaffold=scaffold, rng_seeds=list(seeds),
                           max_turns=plan.turns(scaffold), workers=plan.workers, name=f"{label} {scaffold} {group}")
            reports[(label, scaffold)] = rep
            log(f"eval {group} {label} {scaffold}: medal {_fmt(rep.summary[RATE])} valid {_fmt(rep.summary['valid'])} "
                f"{rep.rank_label} {_fmt(rep.summary['rank'])}")
    return reports


def report_rows(reports: dict[tuple[str, str], EvalReport], group: str = "unseen_synthetic") -> list[dict[str, Any]]:
    return [{"group": group, "policy": label, "scaffold": scaffold + ("" if scaffold == TRAINED_IN else " (unseen)"),
             "episodes": rep.n_episodes, "medal_rate": _fmt(rep.summary[RATE]),
             "valid_rate": _fmt(rep.summary["valid"]),
             "rank": _fmt(rep.summary["rank"]), "reward": _fmt(rep.summary["reward"])}
            for (label, scaffold), rep in sorted(reports.items(), key=_row_order)]


def _row_order(item: tuple[tuple[str, str], EvalReport]) -> tuple[int, int]:
    """Rows by scaffold (react first, as :data:`SCAFFOLDS` lists them), then by arm (SFT first)."""
    (label, scaffold), _ = item
    return (SCAFFOLDS.index(scaffold) if scaffold in SCAFFOLDS else len(SCAFFOLDS), ARMS.index(label))


def valid_by_seed(bs: Store, report: EvalReport) -> dict[str, float]:
    """Held-out seed → the share of its episodes with a valid submission (one arm, one scaffold)."""
    per_seed: dict[str, list[bool]] = {}
    for row in bs.runs.eval_results(report.run_id):
        if not row.get("error") and row.get("env_id"):
            seed = bs.envs.get(str(row["env_id"])).get("seed_id") or row["env_id"]
            per_seed.setdefault(str(seed), []).append(bool(row["valid"]))
    return {seed: sum(v) / len(v) for seed, v in sorted(per_seed.items())}


def _stages(bs: Store, plan: LearnPlan, seed: int, phases: _Phases, sampler: str, vllm_log: Path,
            home: Store | None = None) -> dict[str, Any]:
    """Synthesis, the real suite (built in ``home``, the user's store, once: its boards are cached there), the
    instruct base, demonstrations, SFT, GRPO, the evaluations on both groups and the constant strategies, each
    phase timed."""
    train_ids, heldout_ids = make_envs(bs, plan, seed, phases.log)
    phases.end("synthesis")
    home = home or bs
    build_suite(home, only=plan.real_tasks, note=phases.log)
    real = suite_envs(home, plan.real_tasks)
    phases.end("real_suite")
    stats: dict[str, Any] = collect_instruct_demos(bs, plan, train_ids)
    phases.end("instruct_demos")
    base, base_stats = build_instruct_base(bs, plan, seed)
    stats.update(base_stats)
    phases.end("instruct_sft")
    stats.update(collect_demos(bs, plan, train_ids))
    phases.end("demos")
    phases.log(f"demos: {stats}")
    sft, sft_summary = train_sft(bs, plan, seed, model=str(base), source=SFT_SOURCE, scaffold=TRAINED_IN,
                                 lr=plan.sft_lr)
    phases.end("sft")
    trainer, grpo_summary = train_grpo(bs, plan, sft, seed, phases, sampler, model=str(base), vllm_log=vllm_log)
    phases.end("grpo")
    arms = {"SFT": sft.run_id, "SFT+GRPO": trainer.run_id}
    unseen = [EnvSpec.from_store(bs, e) for e in heldout_ids]
    reports = evaluate(bs, plan, base, arms, unseen, phases.log)
    phases.end("eval")
    real_reports = evaluate(bs, plan, base, arms, real, phases.log, seeds=plan.real_eval_seeds, group="real")
    phases.end("eval_real")
    constants = {"unseen_synthetic": constants_of(unseen, cache_dir(bs.data_dir), phases.log),
                 "real": constants_of(real, cache_dir(home.data_dir), phases.log)}
    phases.end("constants")
    clusters = {"unseen_synthetic": {e.id: str(bs.envs.get(e.id).get("seed_id") or e.id) for e in unseen},
                "real": {e.id: e.id for e in real}}  # one task per dataset: the dataset is the cluster
    runs = {(g, arm, s): rep.run_id for g, reps in (("unseen_synthetic", reports), ("real", real_reports))
            for (arm, s), rep in reps.items()}
    return {"train_ids": train_ids, "heldout_ids": heldout_ids, "real_ids": [e.id for e in real], "stats": stats,
            "sft": sft_summary, "grpo": grpo_summary, "grpo_run": trainer.run_id, "reports": reports,
            "real_reports": real_reports, "runs": runs, "clusters": clusters, "constants": constants}


def run_seeds(seed: int, runs: int) -> list[int]:
    """The RNG seed of each of ``runs`` runs: ``seed``, ``seed + 1``, ... (run 1 is the single run of before)."""
    return [seed + i for i in range(runs)]


def record_run(bs: Store, plan: LearnPlan, done: dict[str, Any], run: int, seed: int, png: Path) -> dict[str, Any]:
    """What one run leaves for the summary, read from its store while it is open: its paired episodes per (group,
    scaffold) and clusters and constants (for the claims over every run), its arms' figures per scaffold, and its
    own record (``summary.per_run``)."""
    pairs = {(g, s): paired_episodes(bs, done["runs"][(g, "SFT", s)], done["runs"][(g, "SFT+GRPO", s)],
                                     done["clusters"][g], run=run)
             for g in done["clusters"] for s in plan.scaffolds}
    reports = done["reports"]
    figures = {s: arm_figures(reports[("SFT", s)], reports[("SFT+GRPO", s)]) for s in plan.scaffolds}
    metrics = bs.runs.metrics(done["grpo_run"])
    own = {
        "run": run, "seed": seed, "arms": report_rows(reports) + report_rows(done["real_reports"], "real"),
        "sft_valid_by_seed": {s: valid_by_seed(bs, reports[("SFT", s)]) for s in plan.scaffolds},
        "train_envs": done["train_ids"], "heldout_envs": done["heldout_ids"], **done["stats"],
        "sft_examples": done["sft"]["examples"], "sft_loss": round(done["sft"]["train_loss"], 4),
        "grpo_steps_done": done["grpo"]["steps_done"], "grpo_warnings": done["grpo"]["warnings"],
        "grpo_skipped_groups": sum(v for _, v in metrics.get("skipped_groups", [])),
        "grpo_groups": sum(v for _, v in metrics.get("groups", [])), "plot": png.name,
        "per_env": {s: per_env(bs, reports[("SFT", s)], reports[("SFT+GRPO", s)]) for s in plan.scaffolds},
    }
    return {"pairs": pairs, "clusters": done["clusters"], "constants": done["constants"], "figures": figures,
            "real_ids": done["real_ids"], "own": own}


def summarize(plan: LearnPlan, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The result's summary over every run (:func:`record_run`): the groups with their claims (each run's beside
    the pooled ones), the unseen seeds' scaffolds and the two flags, each run's own flags and record."""
    numbers = [r["own"]["run"] for r in records]
    pairs: dict[tuple[str, str], list[Pair]] = {}
    clusters: dict[str, dict[str, str]] = {}
    constants: dict[str, dict[str, Any]] = {}
    for r in records:
        for key, ps in r["pairs"].items():
            pairs.setdefault(key, []).extend(ps)
        for g in r["clusters"]:
            clusters.setdefault(g, {}).update(r["clusters"][g])
            constants.setdefault(g, {}).update(r["constants"][g])
    groups = groups_summary(pairs, clusters, constants, plan.scaffolds, TRAINED_IN, numbers)
    figures = {s: [r["figures"][s] for r in records] for s in plan.scaffolds}
    claims = learn_claims(groups, pairs, figures, plan.scaffolds)
    per_run = []
    for r in records:
        mine = {k: [p for p in ps if p["run"] == r["own"]["run"]] for k, ps in pairs.items()}
        own_groups = groups_summary(mine, r["clusters"], r["constants"], plan.scaffolds, TRAINED_IN,
                                    [r["own"]["run"]])
        flags = learn_claims(own_groups, mine, {s: [r["figures"][s]] for s in plan.scaffolds}, plan.scaffolds)
        per_run.append({**r["own"], "react_met": flags["react_met"], "transfer_met": flags["transfer_met"],
                        "scaffolds": flags["scaffolds"]})
    unseen = [s for s in plan.scaffolds if s != TRAINED_IN]
    return {
        "runs": len(records), "run_seeds": [r["own"]["seed"] for r in records], "method": METHOD, "level": LEVEL,
        "groups": groups, "real_envs": records[0]["real_ids"], "episodes_per_arm": plan.episodes_per_arm,
        **claims,
        "runs_react_met": [p["react_met"] for p in per_run], "runs_transfer_met": [p["transfer_met"] for p in per_run],
        "sft_valid_unseen_min": min((claims["scaffolds"][s].get("sft_valid", 0.0) for s in unseen), default=None),
        "heldout_seeds": list(plan.heldout_seeds), "per_run": per_run,
    }


def run(store: Store, quick: bool = False, *, plan: LearnPlan | None = None, seed: int = 0,
        workdir: str | None = None, results_dir: str | Path, progress: Callable[[str], None] | None = None,
        sampler: str = "hf", plan_name: str | None = None, runs: int | None = None, **_: Any) -> BenchResult:
    if plan_name is not None and plan_name not in PLANS:
        raise SandmleError(f"bench learn: unknown plan {plan_name!r}; expected one of {', '.join(PLANS)}")
    if runs is not None and runs < 1:
        raise SandmleError(f"bench learn: --runs {runs}", hint="run the plan at least once: --runs 1")
    named = plan_name not in (None, "full")
    plan = plan or (replace(PLANS[plan_name or "full"], **_quick_sizes()) if quick and named
                    else QUICK if quick else PLANS[plan_name or "full"])
    plan = replace(plan, runs=runs) if runs is not None else plan
    seeds = run_seeds(seed, plan.runs)
    log = progress or _log
    root = Path(workdir) if workdir else store.data_dir / "bench" / f"learn-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True, exist_ok=True)
    # the run count and seeds are declared (logged and recorded) before anything runs
    bench_run = store.runs.create("bench", {"bench": "learn", "quick": quick, "plan": asdict(plan), "runs": plan.runs,
                                            "run_seeds": seeds, "workdir": str(root)}, name="bench learn")
    log(f"{plan.runs} run(s) of plan {plan_name or ('quick' if quick else 'full')} at RNG seeds "
        f"{', '.join(map(str, seeds))}: every run is reported, the claims are over all of them")
    suffix = ("_quick" if quick else "") + ("" if sampler == "hf" else f"_{sampler}") + (
        f"_{plan_name}" if named else "")
    start = time.monotonic()
    try:
        records = []
        with torch_threads(1):  # see torch_threads: the tiny model on a shared CPU
            for number, run_seed in enumerate(seeds, 1):
                phases = _Phases(_prefixed(log, f"run {number}/{plan.runs}: " if plan.runs > 1 else ""))
                png = Path(results_dir) / f"learn_reward{suffix}{_run_suffix(number, plan.runs)}.png"
                records.append(_one_run(store, plan, run_seed, number, phases, sampler, root, png))
        summary = {**summarize(plan, records), "total_s": round(time.monotonic() - start, 1)}
        notes = _notes(plan, plan_name, sampler, seeds)
        store.runs.finish(bench_run, "done", summary=summary)
        rows = claim_rows(summary["groups"], plan.scaffolds, [r["own"]["run"] for r in records])
        return BenchResult(name="learn", rows=rows,
                           summary={**summary, "grpo_sampler": sampler}, notes=notes,
                           variant="-".join(v for v in (None if sampler == "hf" else sampler,
                                                        plan_name if named else None) if v) or None)
    except BaseException as exc:
        store.runs.finish(bench_run, "failed", error=f"{type(exc).__name__}: {exc}")
        raise


def _prefixed(log: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda msg: log(prefix + msg)


def _run_suffix(number: int, runs: int) -> str:
    return "" if runs == 1 else f"_run{number}"


def _one_run(store: Store, plan: LearnPlan, seed: int, number: int, phases: _Phases, sampler: str, root: Path,
             png: Path) -> dict[str, Any]:
    """Run ``number`` of the plan at RNG ``seed`` in a store of its own (``root/run-<number>``): every stage, its
    reward plot, and :func:`record_run` read from its store."""
    folder = root / f"run-{number}"
    folder.mkdir(parents=True, exist_ok=True)
    bs = Store(folder / "sandmle.db")
    try:
        done = _stages(bs, plan, seed, phases, sampler, log_path(store, "learn"), home=store)
        react = done["reports"][("SFT", TRAINED_IN)]
        plot_rewards(bs.runs.metrics(done["grpo_run"]), png, sft_medal=_mean(react, RATE))
        record = record_run(bs, plan, done, number, seed, png)
        record["own"].update(timings_s=phases.timings, total_s=round(phases.elapsed(), 1),
                             store=str(folder / "sandmle.db"))
        return record
    finally:
        bs.close()


def _notes(plan: LearnPlan, plan_name: str | None, sampler: str, seeds: list[int]) -> list[str]:
    unseen = ", ".join(s for s in plan.scaffolds if s != TRAINED_IN)
    notes = [
        f"tiny model (hidden {tiny.HIDDEN}, {tiny.LAYERS} layers, macro tokens) and its training recipe "
        "(engine/agents/tiny/recipe.py): the same as `--model tiny`",
        f"instruct base: every weight of tiny trained on {INSTRUCT_TEACHER} (strategies drawn uniformly) in "
        f"{', '.join(plan.scaffolds)}; SFT and GRPO train a fresh adapter on it in {TRAINED_IN} only",
        f"held-out environments come from seeds never trained on: {', '.join(plan.heldout_seeds)}",
        f"{unseen or 'no other scaffold'}: never seen by SFT or GRPO (both trained in {TRAINED_IN} only)",
        f"{plan.runs} run(s) of the whole plan, declared before they ran, at RNG seeds {', '.join(map(str, seeds))}; "
        "every run's row and the mean of all (each run weighs the same); the flags are over all runs",
        "claims: paired differences of the medal rate over the (task, RNG seed) pairs both arms scored, with the "
        "cluster sign-flip test (engine/eval/cluster.py; clusters: the seeds of unseen_synthetic, the datasets of "
        "real; a seed's or dataset's episodes of every run are one cluster); beats = the 95% interval's lower "
        "bound above 0, tie = equal rates; fewer than 6 clusters cannot show anything at 95%",
        "best constant: every one of the 32 options run as a constant policy on the same tasks (one run "
        "per option and task: deterministic), chosen and rated on exactly the pairs compared; per-task oracle: "
        "the best option of each task",
        f"real: the real held-out suite (engine/realdata/heldout.toml: {plan.real_tasks or f'all {len(suite_entries())}'}), "
        f"RNG seeds {', '.join(map(str, plan.real_eval_seeds))}; its boards are built once in the user's data dir",
        f"plan {plan_name or 'full'}: environments from the {plan.backend} synthesis backend; react demonstrations "
        f"by {', '.join(plan.teachers)}; react episodes of {plan.react_turns} turns",
    ]
    if sampler != "hf":
        notes.append(f"GRPO sampled from a real vLLM server ({sampler}; vLLM built for CPU, float32): tiny's "
                     "recipe with vLLM keeps the norms SFT trained frozen (served merged into the base)")
    return notes
