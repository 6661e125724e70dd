"""Work functions for the executor tests (module level: worker processes and Ray actors import them)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def echo_after(worker, item: tuple[int, float]) -> int:
    index, delay = item
    time.sleep(delay)
    return index


def whose_backend(worker, _) -> tuple[str, int, int]:
    """The worker's name, process and the identity of its sandbox backend (the same object between items)."""
    return worker.name, os.getpid(), id(worker.sandbox)


def die_once(worker, item: tuple[str, int]) -> int:
    """Kill the worker's process the first time ``marker`` is not there yet; then double the number."""
    marker, n = item
    if not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os._exit(3)
    return 2 * n


def always_die(worker, item) -> None:
    os._exit(3)


def fail(worker, item) -> None:
    raise ValueError(f"bad item {item}")
