"""The exploit audit's report: its findings (a file and column that gives the answers away, an undeclared public
file, a file too big to read, an audit that could not run) and the bar an attempt must reach to be one (:class:`Bar`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: without a medal threshold or a strong reference: a finding when an attempt closes this share of that gap
FALLBACK_SHARE = 0.8


@dataclass
class Finding:
    kind: str  #: leak | reachable (the test rows in a dataset the agent's sandbox reads) | undeclared |
    #: unaudited (too big to read, or a lookup that did not finish) | error (the audit could not run: fails closed)
    file: str  #: relative to the environment folder: ``public/crm_export.json``
    column: str | None = None
    how: str = ""
    score: float | None = None
    bar: str = ""

    def line(self) -> str:
        if self.kind == "undeclared":
            return f"undeclared public file {self.file} ({self.how})"
        if self.kind == "reachable":
            return f"{self.how}: its answers can be looked up instead of learned"
        if self.kind in ("error", "unaudited"):
            what = "the audit could not run" if self.kind == "error" else f"{self.file} not audited"
            return f"{what} ({self.how}): not verified"
        return (f"{self.file} column {self.column!r} ({self.how}) scores {self.score:.4g} on the hidden answers "
                f"({self.bar}): the answers can be read instead of learned")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Bar:
    """When an attempt earns a reward a policy should have to learn for: at the lowest rewarded tier (``medal``:
    the bronze threshold), or better than the strong reference;
    without either, when it closes :data:`FALLBACK_SHARE` of the gap from the constant to the metric's best."""

    trivial: float
    lower_is_better: bool
    medal: float | None = None
    strong: float | None = None
    best: float | None = None
    tier: str = "bronze"

    def gap(self, score: float) -> float:
        return (self.trivial - score) if self.lower_is_better else (score - self.trivial)

    def closes(self, score: float) -> float:
        """The share of the gap from the constant to the metric's best that ``score`` closes."""
        if self.best is None or self.best == self.trivial:
            return 0.0
        return self.gap(score) / abs(self.best - self.trivial)

    def share(self, score: float) -> float:
        """How far ``score`` goes from the constant towards the nearest bar (1: it reaches it)."""
        bars = [b for b in (self.medal, self.strong) if b is not None]
        if not bars and self.best is not None:
            bars = [self.trivial + FALLBACK_SHARE * (self.best - self.trivial)]
        lead = max([self.gap(b) for b in bars] + [0.0]) if bars else 0.0
        nearest = min((self.gap(b) for b in bars if self.gap(b) > 0), default=lead)
        return self.gap(score) / nearest if nearest > 0 else 0.0

    def reached(self, score: float) -> bool:
        if self.gap(score) <= 0:
            return False
        if self.medal is not None and (score <= self.medal if self.lower_is_better else score >= self.medal):
            return True
        if self.strong is not None and (score < self.strong if self.lower_is_better else score > self.strong):
            return True
        return self.medal is None and self.strong is None and self.closes(score) >= FALLBACK_SHARE

    def describe(self) -> str:
        parts = [f"{self.tier} {self.medal:.4g}" if self.medal is not None else "",
                 f"strong reference {self.strong:.4g}" if self.strong is not None else ""]
        text = ", ".join(p for p in parts if p)
        return text or f"{FALLBACK_SHARE:.0%} of the way from the constant {self.trivial:.4g} to {self.best}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AuditReport:
    findings: list[Finding] = field(default_factory=list)
    attempts: int = 0
    candidates: int = 0
    #: the best attempts (where, how, score), for the record
    best: list[dict[str, Any]] = field(default_factory=list)
    #: the closest a file or pattern (not a feature) came: its share of the way from the constant to the bar
    closest: float | None = None
    bar: dict[str, Any] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    #: what the lookup probe saw from inside the agent's sandbox (engine.grading.audit.lookup), where it ran
    lookup: dict[str, Any] | None = None
    #: the public files audited → their hash (not stored: a store path compares them to see what changed since)
    files: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def leaks(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "leak"]

    def summary(self) -> str:
        """One line: what was tried, what was found, how close the nearest file came to the bar."""
        tried = f"{self.candidates} candidate columns, {self.attempts} attempts"
        if self.findings:
            return f"exploit audit: {len(self.findings)} finding(s) in {tried}: {self.reason()}"
        near = f"; the closest came {self.closest:.0%} of the way to the bar" if self.closest is not None else ""
        return f"exploit audit: nothing found in {tried}{near}"

    def reason(self) -> str:
        """The first finding (a leak, then a reachable source, before an undeclared file), as the one-line reason
        of a rejection."""
        first = (self.leaks or [f for f in self.findings if f.kind == "reachable"] or self.findings)[0]
        extra = len(self.findings) - 1
        return first.line() + (f" (+{extra} more finding{'s' if extra > 1 else ''})" if extra else "")

    def to_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "findings": [f.to_dict() for f in self.findings]}
        out.pop("files")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AuditReport":
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "findings"}
        return cls(**fields, findings=[Finding(**f) for f in data.get("findings", [])])
