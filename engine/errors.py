"""One exception hierarchy. A :class:`SandmleError` is a user's mistake or a condition they can fix:
the CLI prints ``error: <message>`` (plus the hint) on one line and exits non-zero, with no traceback
unless ``--debug`` is given."""

from __future__ import annotations


class SandmleError(Exception):
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class ConfigError(SandmleError):
    """A bad configuration or input file: names the file and the key."""

    exit_code = 2


class SeedError(ConfigError):
    """A malformed seed folder."""


class SandboxError(SandmleError):
    pass


class IsolationMissing(SandboxError):
    """The local sandbox can confine nothing here (no namespaces, no bubblewrap) and ``isolation = "none"`` was
    not asked for by name: untrusted code is refused rather than run where it could read every file."""


class UnsafeTree(ConfigError):
    """A folder that comes in (or an environment that goes out) holds a symbolic link, a device file, a FIFO or a
    socket: refused, naming the path, before anything is copied or stored."""


class WorkspaceFault(SandboxError):
    """A workspace file operation failed on what the runs in it made: a file the harness writes replaced by a
    folder or a link out of the workspace, a folder made unwritable, a file removed. The agent's doing, never the
    infrastructure's: an episode shows it as an observation, or ends as a failed episode (reward 0) that every rate
    counts."""


class InfrastructureError(SandmleError):
    """The work could not be done at all: an endpoint or a backend did not answer (unreachable, timed out, a
    server or auth error). Not a result: counted apart as an error, never as a rejected environment or a failed
    episode."""


class SynthesisError(SandmleError):
    pass


class GradingError(SandmleError):
    pass


class ExploitFound(GradingError):
    """An environment that can be won by reading a file (the exploit audit found the answers, or an undeclared
    public file): refused wherever it would be stored or used as verified."""


class InvalidSubmission(GradingError):
    """The submission cannot be scored; the message says why (becomes the grade report's error)."""


class GradingFault(InvalidSubmission):
    """The grading itself failed, not the submission: the run of an environment's own evaluator died or ran out of
    time as a whole (under load), leaving no result. An infrastructure fault: a grade (:func:`grade`) raises it, and
    an episode graded so ends with status ``error`` (masked, counted apart, played again), never with a reward.
    Batch graders that mark each submission scored or not keep it as one more unscored submission."""


class TrainingError(SandmleError):
    pass


class FileTooLarge(SandboxError):
    """A workspace file is over the size a caller may take out of the sandbox."""

    def __init__(self, relpath: str, size: int, limit: int):
        super().__init__(f"{relpath}: too large ({size / 2**20:.1f} MB, limit {limit / 2**20:.1f} MB)")
        self.relpath, self.size, self.limit = relpath, size, limit
