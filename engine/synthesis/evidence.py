"""What goes back to the Data engineer when its program is refused: the evidence, with numbers.

A program can fail before it runs (syntax, imports), while it runs (a traceback, a timeout), in its output (the
layout contract), in the grader's proof, or in the verifier (the reference ladder per rung and RNG seed, the
paired-bootstrap interval of the best reference's lead over the constant, which leakage probe fired and how
strongly, which fuzz case crashed the grader). :class:`Evidence` keeps all of it typed; ``render()`` is the text the
engineer reads next to its own program, and the stored attempt keeps ``model_dump()``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Stage = Literal["static", "run", "output", "grader", "verifier"]

#: leakage probes of the verifier: report key → what it measures
LEAK_PROBES = {
    "id_label_corr": "|Spearman| between the numeric part of the id and the label",
    "train_test_duplicates": "share of test rows that duplicate a training row",
    "best_single_column_rule": "score of a depth-3 tree on one column alone",
}


class RungScore(BaseModel):
    rung: str
    seed: int
    status: str
    score: float | None = None
    error: str = ""


class Evidence(BaseModel):
    stage: Stage
    cause: str = Field(description="one line that names the cause")
    traceback: str = ""
    problems: list[str] = Field(default_factory=list)
    ladder: list[RungScore] = Field(default_factory=list)
    means: dict[str, float] = Field(default_factory=dict)
    gap: float | None = None
    min_gap: float | None = None
    bootstrap: tuple[float, float] | None = None  #: 95 % interval of (best reference − constant) over test resamples
    leakage: dict[str, float] = Field(default_factory=dict)
    leaks_fired: list[str] = Field(default_factory=list)
    fuzz_crashes: list[str] = Field(default_factory=list)
    #: for the procedural engineer: multiply the template's signal strength by this
    signal_factor: float = 1.0

    @classmethod
    def from_verdict(cls, reason: str, report: dict[str, Any], signal_factor: float = 1.0) -> "Evidence":
        lo, hi = report.get("gap_lower_q"), report.get("gap_upper_q")
        return cls(
            stage="verifier", cause=reason, signal_factor=signal_factor,
            ladder=[RungScore(rung=r["name"], seed=r["seed"], status=r["status"], score=r.get("score"),
                              error=_last_line(r.get("error", ""))) for r in report.get("ladder", [])],
            means=report.get("means") or {}, gap=report.get("gap"), min_gap=report.get("min_gap"),
            bootstrap=(lo, hi) if lo is not None and hi is not None else None,
            leakage=report.get("leakage") or {}, leaks_fired=report.get("leaks_fired") or [],
            fuzz_crashes=[f"{case}: {outcome}" for case, outcome in (report.get("fuzz") or {}).items()
                          if str(outcome).startswith("crash")],
        )

    def render(self) -> str:
        lines = [f"Refused at the {self.stage} stage: {self.cause}"]
        if self.traceback:
            lines += ["Traceback (last lines of stderr):", self.traceback]
        lines += [f"- {p}" for p in self.problems]
        if self.ladder:
            lines.append("Reference ladder (rung, RNG seed: score):")
            lines += [f"- {r.rung}, seed {r.seed}: " + (f"{r.score:.4g}" if r.score is not None else
                                                       f"{r.status} {r.error}".strip()) for r in self.ladder]
        if self.gap is not None:
            lines.append(f"Best reference leads the constant by {self.gap:.4g} (needs > {self.min_gap:.4g}).")
        if self.bootstrap is not None:
            lines.append(f"Paired bootstrap 95% interval of that lead over test resamples: "
                         f"[{self.bootstrap[0]:.4g}, {self.bootstrap[1]:.4g}] (needs a lower bound > 0).")
        if self.leakage:
            lines.append("Leakage probes: " + "; ".join(f"{k} = {v:.4g} ({LEAK_PROBES.get(k, k)})"
                                                         for k, v in self.leakage.items()))
        lines += [f"Leakage probe fired: {leak}" for leak in self.leaks_fired]
        lines += [f"Grader fuzz case crashed: {c}" for c in self.fuzz_crashes]
        return "\n".join(lines)


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""
