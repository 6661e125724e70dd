"""``sandmle envs import DIR``: tasks in the SandMLE paper's layout (``<task>/prepared/public/{description.md,
train.csv, test.csv, sample_submission.csv, evaluator.py, answer.csv}``; the answers may also be in
``prepared/private/answer.csv``, as our exports keep them) become stored environments, checked like synthesized ones.

For each task:

1. its files are checked -- a task with no evaluator, no answers, no train file (or test file, sample submission,
   description), or answers whose ids do not match the sample submission's is *bad*: one line names the task and
   the cause, nothing is stored;
2. the environment is built in a private folder: ``public/`` without ``answer.csv`` and ``evaluator.py`` (the
   answers leave public/), ``private/answers.csv``, the paper's ``private/evaluator.py``;
3. our reference ladder runs in the sandbox, and the paper's evaluator runs -- in the sandbox too, in a grading
   workspace that is not an agent's -- on the sample submission, the answers and every ladder submission: one that
   fails on the sample submission makes the task bad; its scores decide which of our metrics it computes (the one
   that gives the same score on every probe; ``is_lower_better`` and the metric names in its source break ties);
   where none does, the evaluator itself becomes the environment's grader (``grader = "evaluator"``, run under the
   sandbox at every grade: :mod:`engine.grading.evaluator`), its direction its ``is_lower_better``;
4. :func:`verify_and_store` runs the verifier (ladder, learnability, saturation, grader fuzzing, leakage probes, the
   exploit audit),
   builds our leaderboard and medal thresholds, keeps the paper's thresholds beside ours, and stores the
   environment -- verified, or rejected with the verifier's reason -- with provenance ``imported: sandmle``.

An evaluator that fails on the sample submission, or gives no direction while computing none of our metrics, or
scores the answers no better than the sample submission, makes the task bad.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from store import Store, sha256_file

from ..config import Settings, load_settings
from ..envs.layout import EnvSpec, GradeSpec, envs_root, new_build_dir
from ..envs.provenance import IMPORTED_BACKEND
from ..envs.storage import file_rows
from ..envs.tree import require_plain_tree
from ..errors import InvalidSubmission, SandmleError
from ..grading.evaluator import run_evaluator as run_program
from ..eval.boards import paper_thresholds
from ..grading.external import direction_of, output_object, thresholds_of
from ..grading.metrics import METRICS, get_metric
from ..grading.score import score_submission
from ..sandbox import SandboxBackend, get_backend
from ..synthesis.realized import SpecError, infer_spec, summarize
from ..synthesis.solutions import with_solution_imports
from ..synthesis.verifier import Verdict, run_ladder, verify

#: the layout's provenance name
LAYOUT = "sandmle"
#: two scores agree when they differ by no more than this (relative to their size, at least 1)
TOLERANCE = 1e-6
#: media file suffixes and the modality they make
MEDIA = {".png": "image", ".jpg": "image", ".jpeg": "image", ".npy": "timeseries", ".wav": "audio"}
#: metric names an evaluator's source may mention, to prefer among metrics that agree on every probe
HINTS = {"roc_auc": ("roc_auc",), "f1_macro": ("macro",), "f1_micro": ("micro",), "f1_weighted": ("weighted",),
         "log_loss": ("log_loss",), "rmsle": ("squared_log", "rmsle"), "mae": ("absolute",), "r2": ("r2",),
         "qwk": ("kappa", "quadratic"), "accuracy": ("accuracy",), "rmse": ("squared_error", "rmse")}


class BadTask(SandmleError):
    """A task that cannot be imported; the message is the cause."""


@dataclass
class TaskOutcome:
    task: str
    status: str  #: verified | rejected | bad
    reason: str = ""
    env_id: str | None = None
    metric: str | None = None
    thresholds: dict[str, float] | None = None
    paper_thresholds: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        if self.status == "bad":
            return f"bad {self.task}: {self.reason}"
        graded = "graded by its own evaluator" if self.metric == GradeSpec.EVALUATOR else self.metric
        head = f"{self.status} {self.task} -> {self.env_id} ({graded})"
        return head + (f": {self.reason}" if self.reason else "") + _thresholds_text(self)


def _thresholds_text(o: TaskOutcome) -> str:
    def fmt(t: dict[str, float] | None) -> str:
        return " / ".join(f"{t[k]:.4g}" for k in ("gold", "silver", "bronze", "median")) if t else "-"
    if o.status != "verified":
        return ""
    return f"\n    medals gold/silver/bronze/median: ours {fmt(o.thresholds)} · paper's {fmt(o.paper_thresholds)}"


@dataclass
class PaperTask:
    """One task folder of the paper's layout, its files checked."""

    name: str
    dir: Path
    public: Path
    answers: Path
    evaluator: Path
    id_column: str

    def source(self) -> dict[str, Any]:
        return {"imported": LAYOUT, "task": self.name, "source": str(self.dir.resolve()),
                "answers_sha256": sha256_file(self.answers), "evaluator_sha256": sha256_file(self.evaluator)}


@dataclass
class ImportDraft:
    """An imported environment on its way to the store: the build folder, its spec and what the probes found."""

    task: PaperTask
    env_id: str
    build: Path
    spec: GradeSpec
    modality: str
    title: str
    paper: dict[str, Any] = field(default_factory=dict)


def find_tasks(folder: Path) -> list[Path]:
    """``folder`` itself when it is one task, else its sub-folders that are tasks (sorted)."""
    if not folder.is_dir():
        raise SandmleError(f"{folder}: no such folder")
    if _public_of(folder) is not None:
        return [folder]
    tasks = sorted(p for p in folder.iterdir() if p.is_dir() and _public_of(p) is not None)
    if not tasks:
        raise SandmleError(f"{folder}: holds no task in the paper's layout (<task>/prepared/public/)")
    return tasks


def _public_of(task: Path) -> Path | None:
    for public in (task / "prepared" / "public", task / "public"):
        if public.is_dir():
            return public
    return None


def check_task(task: Path) -> PaperTask:
    """The task's files, or :class:`BadTask` naming what is missing or wrong."""
    public = _public_of(task)
    if public is None:
        raise BadTask("no prepared/public/ folder")
    rel = public.relative_to(task).as_posix()
    for name, what in (("evaluator.py", "no evaluator"), ("train.csv", "no train file"),
                       ("test.csv", "no test file"), ("sample_submission.csv", "no sample submission"),
                       ("description.md", "no description")):
        if not (public / name).is_file():
            raise BadTask(f"{what} ({rel}/{name})")
    candidates = [public / "answer.csv", public.parent / "private" / "answer.csv",
                  public.parent / "private" / "answers.csv"]
    answers = next((p for p in candidates if p.is_file()), None)
    if answers is None:
        raise BadTask(f"no answers (answer.csv in {rel}/ or {public.parent.relative_to(task).as_posix()}/private/)")
    return PaperTask(name=task.name, dir=task, public=public, answers=answers, evaluator=public / "evaluator.py",
                     id_column=_check_ids(public, answers))


def _read(path: Path, **kw: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kw)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise BadTask(f"{path.name} is not a readable CSV ({str(exc).splitlines()[0]})") from None


def _check_ids(public: Path, answers: Path) -> str:
    """The id column (shared by test.csv and the sample submission); the answers must hold exactly its ids."""
    test = _read(public / "test.csv", nrows=0)
    sample = _read(public / "sample_submission.csv", dtype=str)
    idc = next((c for c in sample.columns if c in test.columns), sample.columns[0])
    ans = _read(answers, dtype=str)
    if idc not in ans.columns:
        raise BadTask(f"ids that do not match: {answers.name} has no id column {idc!r}")
    extra, missing = set(ans[idc]) - set(sample[idc]), set(sample[idc]) - set(ans[idc])
    if extra or missing or len(ans) != len(sample):
        example = sorted(extra or missing)[0] if extra or missing else ""
        raise BadTask(f"ids that do not match: {answers.name} has {len(ans)} rows, sample_submission.csv "
                      f"{len(sample)}; {len(extra)} ids only in the answers, {len(missing)} only in the sample"
                      + (f" (e.g. {example!r})" if example else " (duplicated ids)"))
    return str(idc)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:30] or "task"


def _title(description: str, fallback: str) -> str:
    for line in description.splitlines():
        if line.strip().lstrip("#").strip():
            return line.strip().lstrip("#").strip()[:120]
    return fallback


# ---------------------------------------------------------------------------------------------- the probes
def _evaluator_json(result: dict[str, Any]) -> dict[str, Any] | None:
    """The evaluator's JSON object when it exited 0 and gave a numeric score, else None."""
    data = output_object(str(result.get("stdout") or ""))
    if result.get("rc") != 0 or data is None:
        return None
    try:
        float(data["score"])
    except (KeyError, TypeError, ValueError):
        return None
    return data


def run_evaluator(sandbox: SandboxBackend, task: PaperTask,
                  probes: dict[str, pd.DataFrame]) -> dict[str, dict[str, Any]]:
    """The paper's evaluator on every probe submission, in one sandbox run of a grading workspace (the task's
    public files, the evaluator and the answers beside it: never an agent's workspace)."""
    code = task.evaluator.read_text(encoding="utf-8", errors="replace")
    results = run_program(code, task.public, task.answers.read_bytes(), probes, sandbox=sandbox)
    if all(r.get("rc") is None for r in results.values()):
        said = str(next(iter(results.values())).get("stderr", "")) if results else "no probes"
        raise BadTask(f"its evaluator could not be run ({said})")
    return results


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def task_type_for(metric: str, build: Path) -> str:
    m = get_metric(metric)
    train, test = pd.read_csv(build / "public" / "train.csv"), pd.read_csv(build / "public" / "test.csv", nrows=0)
    targets = [c for c in train.columns if c not in test.columns]
    if m.regression:
        return "multi_target_regression" if len(targets) > 1 else "regression"
    if m.prediction == "proba":
        return "multiclass"
    if m.prediction == "value":
        return "multilabel" if len(targets) > 1 else "binary"
    if m.ordinal:
        return "ordinal"
    return "binary" if targets and train[targets[0]].nunique() == 2 else "multiclass"


def map_metric(build: Path, answers: pd.DataFrame, probes: dict[str, pd.DataFrame], theirs: dict[str, float | None],
               lower_is_better: bool | None, evaluator_source: str) -> GradeSpec | None:
    """The grading spec of the first metric of ours that gives the evaluator's score (or its refusal) on every
    probe; metrics the evaluator's source names come first. None when none does."""
    text = evaluator_source.lower()
    names = [n for n, m in METRICS.items() if lower_is_better is None or m.lower_is_better == lower_is_better]
    names.sort(key=lambda n: not any(h in text for h in HINTS.get(n, (n,))))
    for name in names:
        try:
            spec = infer_spec(build, name, task_type_for(name, build))
        except (SpecError, ValueError, KeyError):
            continue
        agree = True
        for probe, df in probes.items():
            try:
                ours: float | None = score_submission(spec, answers, df)
            except InvalidSubmission:
                ours = None
            if not _close(ours, theirs[probe]):
                agree = False
                break
        if agree:
            return spec
    return None


# ---------------------------------------------------------------------------------------------- one task
def _modality(build: Path, spec: GradeSpec) -> str:
    kinds = {c.kind for c in summarize(build, spec).columns if c.name not in (spec.id_column, *spec.target_columns)}
    suffixes = {p.suffix.lower() for p in (build / "public").rglob("*") if p.is_file()}
    media = next((MEDIA[s] for s in sorted(suffixes) if s in MEDIA), None)
    return media or ("text" if "text" in kinds else "tabular")


def _build(store: Store, task: PaperTask, run_id: str) -> tuple[str, Path]:
    """A reserved environment id (a pending row) and its private build folder with public/ and private/."""
    env_id = store.envs.reserve(f"paper-{_slug(task.name)}", {
        "seed_id": None, "run_id": run_id, "title": f"{task.name} (being imported)", "modality": "tabular",
        "task_type": "", "metric": "", "lower_is_better": 0, "id_column": task.id_column, "target_columns": [],
        "backend": IMPORTED_BACKEND}, envs_root(store))
    build = new_build_dir(envs_root(store), env_id)
    (build / "public").mkdir()
    (build / "private").mkdir()
    for p in task.public.iterdir():
        if p.name in ("answer.csv", "evaluator.py"):
            continue  # the answers leave public/; the evaluator is the grader's, not the agent's
        (shutil.copytree if p.is_dir() else shutil.copy2)(p, build / "public" / p.name)
    shutil.copyfile(task.answers, build / "private" / "answers.csv")
    shutil.copyfile(task.evaluator, build / "private" / "evaluator.py")
    return env_id, build


def _probes(sandbox: SandboxBackend, build: Path, task: PaperTask,
            answers: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The sample submission, the answers as a submission, and every submission of our reference ladder."""
    idc = task.id_column
    sample = pd.read_csv(build / "public" / "sample_submission.csv", dtype={idc: str})
    probes = {"sample": sample}
    if all(c in answers.columns for c in sample.columns):
        probes["answers"] = answers[list(sample.columns)]
    stub = GradeSpec(metric="accuracy", lower_is_better=False, id_column=idc, target_columns=[],
                     prediction_columns=[c for c in sample.columns if c != idc])
    runs, subs, _ = run_ladder(sandbox, build / "public", stub)
    failed = [r for r in runs if r.status != "ok"]
    if failed:
        last = failed[0].error.strip().splitlines()[-1] if failed[0].error.strip() else failed[0].status
        raise BadTask(f"our reference solution {failed[0].name} fails on its data: {last}")
    probes.update({f"{name}-{seed}": df for (name, seed), df in sorted(subs.items())})
    return probes


def _sample_json(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    sample = _evaluator_json(results["sample"])
    if sample is None:
        r = results["sample"]
        detail = (str(r.get("stderr") or "") or str(r.get("stdout") or "")).strip().splitlines()
        raise BadTask(f"its evaluator fails on the sample submission (exit {r.get('rc')}: "
                      f"{detail[-1][:200] if detail else 'no output'})")
    return sample


def _proxy_order(values: pd.DataFrame) -> list[str]:
    """Our metrics that read submissions shaped like ``values`` (the answers' prediction columns), likeliest first."""
    num = values.apply(pd.to_numeric, errors="coerce")
    if num.notna().all().all():
        arr = num.to_numpy(dtype=float)
        if arr.shape[1] > 1 and ((arr >= 0) & (arr <= 1)).all() and np.allclose(arr.sum(axis=1), 1.0, atol=1e-6):
            return ["log_loss", "multilabel_log_loss"]
        if (arr == np.round(arr)).all() and all(num[c].nunique() <= 20 for c in num.columns):
            return ["accuracy", "f1_macro", "rmse", "mcrmse"]
        return ["mcrmse", "multilabel_log_loss"] if arr.shape[1] > 1 else ["rmse"]
    if any(values[c].astype(str).str.contains(" ").any() for c in values.columns):
        return ["map_at_3"]
    return ["accuracy", "f1_macro"]


def proxy_metric(build: Path, answers: pd.DataFrame, probes: dict[str, pd.DataFrame], id_column: str) -> str | None:
    """A metric of ours that reads the task's submissions (same prediction shape) and scores every ladder
    submission: an evaluator-graded environment's proxy, for screening only. None when none does."""
    pred = [c for c in probes["sample"].columns if c != id_column]
    order = _proxy_order(answers[pred])
    ladder = {n: df for n, df in probes.items() if n not in ("sample", "answers")}
    for name in order + [n for n in METRICS if n not in order]:
        try:
            spec = infer_spec(build, name, task_type_for(name, build))
            for df in ladder.values():
                score_submission(spec, answers, df)
        except (SpecError, ValueError, KeyError, InvalidSubmission):
            continue
        return name
    return None


def own_grader(build: Path, task: PaperTask, answers: pd.DataFrame, probes: dict[str, pd.DataFrame],
               theirs: dict[str, float | None], lower_is_better: bool | None) -> GradeSpec:
    """The grading spec of a task whose evaluator computes none of our metrics: the evaluator itself grades
    (``grader = "evaluator"``), in its direction, with a proxy metric of ours for screening; or :class:`BadTask`."""
    lead = "its evaluator's metric maps onto none of ours"
    if lower_is_better is None:
        raise BadTask(f"{lead} and it prints no is_lower_better (so its direction is unknown)")
    missing = [c for c in probes["sample"].columns if c not in answers.columns]
    if missing:
        raise BadTask(f"{lead} and its answers lack the submission's columns {missing} (our ladder's checks need them)")
    perfect, sample = theirs.get("answers"), theirs["sample"]
    if perfect is None:
        raise BadTask(f"{lead} and it refuses the answers themselves as a submission")
    if sample is not None and not (perfect < sample if lower_is_better else perfect > sample):
        raise BadTask(f"{lead} and it scores the answers ({perfect:.4g}) no better than the sample submission "
                      f"({sample:.4g}), although it says {'lower' if lower_is_better else 'higher'} is better")
    proxy = proxy_metric(build, answers, probes, task.id_column)
    if proxy is None:
        raise BadTask(f"{lead} and its submissions fit no prediction shape of ours (labels, probabilities, numbers, "
                      "rankings)")
    base = infer_spec(build, proxy, task_type_for(proxy, build))
    return dataclasses.replace(base, metric=GradeSpec.EVALUATOR, lower_is_better=lower_is_better,
                               grader=GradeSpec.EVALUATOR, proxy_metric=proxy,
                               answer_columns=[str(c) for c in answers.columns],
                               evaluator_code=(build / "private" / "evaluator.py").read_text(encoding="utf-8",
                                                                                              errors="replace"),
                               home=build)


def prepare(store: Store, sandbox: SandboxBackend, task: PaperTask, run_id: str) -> ImportDraft:
    """Build one task's environment and find its grading spec (a :class:`BadTask` leaves nothing stored): the
    metric of ours the evaluator computes, else the evaluator itself as the grader."""
    env_id, build = _build(store, task, run_id)
    try:
        answers = pd.read_csv(build / "private" / "answers.csv", dtype={task.id_column: str})
        probes = _probes(sandbox, build, task, answers)
        results = run_evaluator(sandbox, task, probes)
        sample = _sample_json(results)
        theirs = {n: (float(d["score"]) if (d := _evaluator_json(r)) else None) for n, r in results.items()}
        lib = direction_of(sample)
        spec = map_metric(build, answers, probes, theirs, lib,
                          task.evaluator.read_text(encoding="utf-8", errors="replace")) or \
            own_grader(build, task, answers, probes, theirs, lib)
        (build / "private" / "grade.json").write_text(json.dumps(spec.to_dict(), indent=2, sort_keys=True))
        paper = {"thresholds": thresholds_of(sample), "is_lower_better": lib, "probe_scores": theirs,
                 "grader": "its own evaluator" if spec.external else f"our {spec.metric}"}
        description = (build / "public" / "description.md").read_text(encoding="utf-8", errors="replace")
        return ImportDraft(task=task, env_id=env_id, build=build, spec=spec, modality=_modality(build, spec),
                           title=_title(description, task.name), paper=paper)
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        store.envs.drop_pending(env_id)
        raise


def verify_and_store(store: Store, sandbox: SandboxBackend, draft: ImportDraft, *, run_id: str, split: str,
                     settings: Settings) -> TaskOutcome:
    """The one place an imported environment is verified and stored: the verifier (reference ladder, learnability,
    saturation, grader fuzzing, leakage probes, then the exploit audit of every public file) decides verified or
    rejected, and the row, its files, leaderboard
    and thresholds are stored in one transaction, the folder renamed into ``envs/<id>``. (Every check an imported
    environment must pass before it is stored belongs here.)"""
    media = next((c.name for c in summarize(draft.build, draft.spec).columns if c.kind == "media"), None)
    verdict: Verdict = verify(sandbox, draft.build, draft.spec, seeds=tuple(range(settings.synthesis.ladder_seeds)),
                              media_col=media, rng=np.random.default_rng(0))
    status = "verified" if verdict.ok else "rejected"
    if verdict.ok:
        verdict.thresholds = paper_thresholds(draft.paper, verdict.thresholds)
    final = envs_root(store) / draft.env_id
    row = _row(draft, verdict, status, run_id, split, final)
    meta = {**{k: v for k, v in row.items() if k != "verification"}, "leaderboard": verdict.leaderboard,
            "grade": draft.spec.to_dict(), "provenance": row["verification"]["provenance"]}
    (draft.build / "env.json").write_text(json.dumps(meta, indent=2, default=str, sort_keys=True) + "\n")
    (draft.build / ".owner").unlink(missing_ok=True)
    files = file_rows(draft.build)
    if final.exists():
        shutil.rmtree(final)
    draft.build.rename(final)
    store.envs.add(row, files=files, leaderboard=verdict.leaderboard if verdict.ok else [], replace=True)
    return TaskOutcome(task=draft.task.name, status=status, reason=verdict.reason, env_id=draft.env_id,
                       metric=draft.spec.metric, thresholds=verdict.thresholds if verdict.ok else None,
                       paper_thresholds=draft.paper.get("thresholds"))


def _row(draft: ImportDraft, verdict: Verdict, status: str, run_id: str, split: str, final: Path) -> dict[str, Any]:
    spec, public = draft.spec, draft.build / "public"
    return {
        "id": draft.env_id, "seed_id": None, "run_id": run_id, "title": draft.title, "status": status,
        "reason": verdict.reason or None, "split": split, "modality": draft.modality,
        "task_type": spec.task_type, "metric": spec.metric, "lower_is_better": int(spec.lower_is_better),
        "id_column": spec.id_column, "target_columns": spec.target_columns,
        "n_train": len(pd.read_csv(public / "train.csv", usecols=[0])),
        "n_test": len(pd.read_csv(public / "test.csv", usecols=[0])), "backend": IMPORTED_BACKEND, "rng_seed": None,
        "blueprint": {}, "scenario": {}, "thresholds": verdict.thresholds if verdict.ok else None,
        "verification": {"report": verdict.report, "provenance": draft.task.source(), "paper": draft.paper},
        "dir": str(final), "fingerprint": None}


# ---------------------------------------------------------------------------------------------- a folder
def import_tasks(store: Store, folder: str | Path, *, split: str = "train", settings: Settings | None = None,
                 sandbox: SandboxBackend | None = None) -> list[TaskOutcome]:
    """Import one task or every task of a folder (see the module docstring); one outcome per task."""
    if split not in ("train", "heldout"):
        raise SandmleError(f"unknown split {split!r}; expected train or heldout")
    tasks = find_tasks(Path(folder).expanduser())
    for task in tasks:  # every task, before anything runs, is copied or stored
        require_plain_tree(task, "a task folder")
    settings = settings or load_settings()
    own = sandbox is None
    # before the run is stored: a sandbox that cannot start (or confine) refuses in one line
    box = sandbox or get_backend(store=store, settings=with_solution_imports(settings.sandbox))
    outcomes: list[TaskOutcome] = []
    try:
        run_id = store.runs.create("synthesis", {"mode": "envs import", "folder": str(Path(folder).resolve()),
                                                 "layout": LAYOUT, "split": split, "tasks": len(tasks),
                                                 "isolation": box.isolation_note},
                                   name=f"envs import {Path(folder).name}")
    except BaseException:
        if own:
            box.close()
        raise
    try:
        for task_dir in tasks:
            try:
                draft = prepare(store, box, check_task(task_dir), run_id)
                outcomes.append(verify_and_store(store, box, draft, run_id=run_id, split=split, settings=settings))
            except BadTask as exc:
                outcomes.append(TaskOutcome(task=task_dir.name, status="bad", reason=str(exc)))
    except BaseException as exc:
        store.runs.finish(run_id, "failed", error=str(exc))
        raise
    finally:
        if own:
            box.close()
    store.runs.finish(run_id, "done", summary={s: sum(o.status == s for o in outcomes)
                                               for s in ("verified", "rejected", "bad")})
    return outcomes
