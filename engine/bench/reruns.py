"""``sandmle bench reruns``: how far the tiny model's SFT path is from an invalid run, measured over reruns of the
same commands. CPU training is not bit-reproducible (batch composition in the shared sampler and thread scheduling
vary the numerics), and one invalid run in four of a documented recipe is a margin too thin to build on (issue #34).

Two recipes, each in a store of its own under ``<data dir>/bench/reruns-<stamp>/`` and each rerun 2 x :data:`K`
times (results and what was tried: docs/benchmarks.md "SFT margin over reruns"):

- **quickstart**: the README quick start's SFT path — procedural synthesis of forest-cover and pizza-requests (2
  each, RNG seed 0) into the train split, the two scripted teachers on ``split:train`` (2 RNG seeds, 6 turns),
  ``train sft --model tiny --source-policy scripted``, an eval of its adapter on ``split:train`` (2 RNG seeds, 6
  turns);
- **skill-0.7**: the issue's variant — 3 environments each of forest-cover and tabular-binary-manufacturing, a
  ``scripted:skill=0.7`` teacher with 3 RNG seeds (the eval command's default turns), the same ``train sft``, an
  eval of its adapter on those environments with the same seeds and turns.

The environments and the teacher's demonstrations are made once per recipe (both are deterministic); each rerun
trains a fresh adapter and evaluates it, with the settings the CLI uses. :data:`K` reruns at seed 0 (the CLI's
default) repeat the same commands: torch's global RNG is seeded with the rerun's seed before ``train sft`` (as
``train sft`` itself now seeds the new LoRA's initial weights from its seed), so on one thread they train the
same adapter and what varies is the evaluation (the shared sampler's batches vary the numerics). :data:`K` more at
seeds 1..K vary the training too — the small change a researcher makes.

A rerun counts as valid when its valid rate is at least :data:`VALID_AT` (the quick start's test asks the same)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from store import Store

from ..agents import tiny
from ..config import load_settings
from ..envs.layout import EnvSpec
from ..eval.run import EvalReport, run_eval
from ..models.adapters import final_adapter
from ..rl.config import SFTConfig, load_config
from ..rl.sft import SFTRun
from ..seeds.load import load_shipped
from ..synthesis.pipeline import synthesize
from . import BenchResult, torch_threads

#: reruns of each recipe at seed 0, and as many at seeds 1..K (``--quick``: one at seed 0)
K = 4
#: a rerun is valid when this share of its episodes (at least) submitted a valid file
VALID_AT = 0.5
#: the README's two teachers: a plain model (valid, no medal) and the strong blend
README_TEACHERS = ("scripted:strategy=linear/words/plain/nochars", "scripted:strategy=blend/words+chars/rich/chars")


@dataclass(frozen=True)
class Recipe:
    name: str
    #: (seed, environments) synthesized with the procedural backend at RNG seed 0, all in the train split
    envs: tuple[tuple[str, int], ...]
    teachers: tuple[str, ...]
    #: RNG seeds 0..n-1 of the teacher's episodes and of the adapter's
    rng_seeds: int
    #: turns of an episode (None: the eval command's default)
    max_turns: int | None
    what: str

    def scaled(self) -> Recipe:
        """The ``--quick`` version: one environment of each seed, one RNG seed."""
        return Recipe(self.name, tuple((s, 1) for s, _ in self.envs), self.teachers, 1, self.max_turns, self.what)


RECIPES = (
    Recipe("quickstart", (("forest-cover", 2), ("pizza-requests", 2)), README_TEACHERS, 2, tiny.MAX_TURNS,
           "README quick start: 2 forest-cover + 2 pizza-requests, the two scripted teachers, 2 RNG seeds, 6 turns"),
    Recipe("skill-0.7", (("forest-cover", 3), ("tabular-binary-manufacturing", 3)), ("scripted:skill=0.7",), 3, None,
           "issue #34: 3 forest-cover + 3 tabular-binary-manufacturing, a scripted:skill=0.7 teacher, 3 RNG seeds, "
           "the eval's default turns"),
)


def _log(msg: str) -> None:
    print(f"[reruns {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def prepare(bs: Store, recipe: Recipe, log: Callable[[str], None]) -> tuple[list[EnvSpec], dict[str, float]]:
    """Synthesize the recipe's environments into the train split and run its teachers on them."""
    load_shipped(bs)
    ids: list[str] = []
    for seed_id, count in recipe.envs:
        made = synthesize(bs, seed_id, count, backend="procedural", rng_seed=0)
        ids += [o.env_id for o in made.verified]
        log(f"{recipe.name}: {seed_id} {len(made.verified)}/{count} verified")
    bs.envs.set_split(ids, "train")
    envs = [EnvSpec.from_store(bs, e) for e in ids]
    executor = load_settings().executor  # as `sandmle eval` runs its episodes
    teacher: dict[str, float] = {}
    for spec in recipe.teachers:
        rep = run_eval(bs, spec, envs, rng_seeds=list(range(recipe.rng_seeds)), max_turns=recipe.max_turns,
                       workers=executor.workers, executor=executor.kind, name=f"teacher {spec}")
        teacher[spec] = _mean(rep, "valid")
        log(f"{recipe.name}: teacher {spec} valid {teacher[spec]:.2f}")
    return envs, teacher


def _mean(rep: EvalReport, rate: str) -> float:
    return rep.summary[rate]["mean"] or 0.0


def rerun(bs: Store, recipe: Recipe, envs: list[EnvSpec], index: int, seed: int) -> dict[str, Any]:
    """``train sft --model tiny --source-policy scripted`` (the CLI's defaults, ``seed``) and an eval of its adapter
    on the recipe's environments; one row of the table."""
    import torch  # heavy optional dependency

    start = time.monotonic()
    model = tiny.ensure(bs.data_dir)  # built on first use (its own seed), before the RNG is seeded
    # torch's global RNG seeded with the rerun's seed, as when this was measured (then the new LoRA's initial
    # weights came from it; `train sft` now seeds them from its own seed as well)
    torch.manual_seed(seed)
    cfg = load_config(SFTConfig, None, {"model": tiny.NAME, "source_policy": "scripted", "seed": seed,
                                        "name": f"sft {recipe.name} #{index}"})
    sft = SFTRun(bs, cfg)
    summary = sft.train()
    sampling = f"temperature={tiny.TEMPERATURE},max_new_tokens={tiny.MAX_NEW_TOKENS}"
    # folders, not names: `tiny` and run ids resolve in the user's data dir
    spec = f"hf:{model},adapter={final_adapter(bs, sft.run_id)},{sampling}"
    executor = load_settings().executor
    rep = run_eval(bs, spec, envs, rng_seeds=list(range(recipe.rng_seeds)), max_turns=recipe.max_turns,
                   workers=executor.workers, executor=executor.kind, name=f"eval {recipe.name} #{index}")
    valid = _mean(rep, "valid")
    return {"recipe": recipe.name, "rerun": index, "seed": seed, "examples": summary["examples"],
            "train_loss": round(summary["train_loss"], 4), "episodes": rep.n_episodes, "valid_rate": valid,
            "medal_rate": _mean(rep, "any_medal"), "valid": valid >= VALID_AT, "sft_run": sft.run_id,
            "eval_run": rep.run_id, "episodes_valid": _episodes(bs, rep), "wall_s": round(time.monotonic() - start, 1)}


def _episodes(bs: Store, rep: EvalReport) -> str:
    """One character per episode, in (environment, RNG seed) order: 'v' valid, '.' not (two identical reruns have
    the same string)."""
    rows = sorted(bs.runs.eval_results(rep.run_id), key=lambda r: (str(r.get("env_id")), r.get("rng_seed") or 0))
    return "".join("v" if r.get("valid") else "." for r in rows)


def reruns(same: int, varied: int, one: Callable[[int, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``same`` reruns at seed 0 (the CLI's default), then ``varied`` reruns at seeds 1, 2, ...;
    ``one(index, seed)`` makes each."""
    return [one(i, 0) for i in range(1, same + 1)] + [one(same + j, j) for j in range(1, varied + 1)]


def spread(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A recipe's spread over its reruns: min/mean/max of the valid and medal rates, and whether every rerun was
    valid (valid rate >= :data:`VALID_AT`) and whether every one submitted at least one valid file."""
    out: dict[str, Any] = {"reruns": len(rows)}
    for rate in ("valid_rate", "medal_rate"):
        values = [r[rate] for r in rows]
        out[rate] = {"min": min(values), "mean": round(sum(values) / len(values), 4), "max": max(values)}
    out["all_valid"] = all(r["valid"] for r in rows)
    out["all_above_0"] = all(r["valid_rate"] > 0 for r in rows)
    same = [r for r in rows if r["seed"] == 0]
    #: reruns at seed 0 trained the same adapter (same loss): their spread is the evaluation's alone
    out["same_seed_same_loss"] = len({r["train_loss"] for r in same}) <= 1
    out["same_seed_valid_rate"] = sorted(r["valid_rate"] for r in same)
    return out


def run(store: Store, quick: bool = False, *, k: int | None = None, workdir: str | None = None,
        recipes: tuple[Recipe, ...] = RECIPES, progress: Callable[[str], None] | None = None,
        results_dir: str | Path | None = None, **_: Any) -> BenchResult:
    log = progress or _log
    k = k or (1 if quick else K)
    root = Path(workdir) if workdir else store.data_dir / "bench" / f"reruns-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True, exist_ok=True)
    bench_run = store.runs.create("bench", {"bench": "reruns", "quick": quick, "k": k, "workdir": str(root)},
                                  name="bench reruns")
    start = time.monotonic()
    rows: list[dict[str, Any]] = []
    recipes_out: dict[str, Any] = {}
    try:
        with torch_threads(1):  # see torch_threads: the tiny model on a shared CPU
            for recipe in recipes:
                recipe = recipe.scaled() if quick else recipe
                bs = Store(root / recipe.name / "sandmle.db")
                try:
                    envs, teacher = prepare(bs, recipe, log)

                    def one(i: int, seed: int) -> dict[str, Any]:
                        row = rerun(bs, recipe, envs, i, seed)
                        log(f"{recipe.name} #{i} (seed {seed}): valid {row['valid_rate']:.2f} medal "
                            f"{row['medal_rate']:.2f} loss {row['train_loss']} {row['episodes_valid']} "
                            f"({row['wall_s']:.0f}s)")
                        return row

                    mine = reruns(k, 0 if quick else k, one)
                    rows += mine
                    recipes_out[recipe.name] = {"what": recipe.what, "envs": [e.id for e in envs],
                                                "teacher_valid": teacher, **spread(mine),
                                                "runs": {r["rerun"]: {"sft": r["sft_run"], "eval": r["eval_run"]}
                                                         for r in mine},
                                                "store": str(root / recipe.name / "sandmle.db")}
                finally:
                    bs.close()
        summary: dict[str, Any] = {"valid_at": VALID_AT, "k": k, "recipes": recipes_out,
                                   "all_valid": all(r["all_valid"] for r in recipes_out.values()),
                                   "total_s": round(time.monotonic() - start, 1)}
        store.runs.finish(bench_run, "done", summary=summary)
    except BaseException as exc:
        store.runs.finish(bench_run, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    notes = [f"a rerun is valid when its valid rate is >= {VALID_AT}; episodes_valid: one character per episode "
             "(v valid, . not) in (environment, RNG seed) order",
             "each recipe's environments and teacher demonstrations are made once; a rerun is `train sft --model tiny "
             "--source-policy scripted --seed SEED` (the CLI's defaults otherwise) and an eval of its adapter, torch "
             "on one thread, its global RNG seeded with SEED first (the new LoRA's initial weights)",
             "seed 0: the same commands again (the same adapter: the spread is the evaluation's); seeds 1..K: the "
             "training varies too",
             *(f"{name}: {r['what']}" for name, r in recipes_out.items())]
    table = [{k_: r[k_] for k_ in ("recipe", "rerun", "seed", "examples", "train_loss", "episodes", "valid_rate",
                                   "medal_rate", "valid", "episodes_valid", "wall_s")} for r in rows]
    return BenchResult(name="reruns", rows=table, summary=summary, notes=notes)
