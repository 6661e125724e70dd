"""``python -m workbench.jobrun RUN_ID LOG -- ARGV…``: run ``sandmle ARGV…`` for a workbench job and record how it
ended in the job's run row, so a job left running when the app quit still reports done/failed to the next session."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from store import Store

from .cli import main as cli_main
from .jobs import tail


def main() -> None:
    run_id, log_path, sep, *argv = sys.argv[1:]
    if sep != "--":
        raise SystemExit("usage: python -m workbench.jobrun RUN_ID LOG -- ARGV…")
    # SIGTERM ends the job like Ctrl-C does (the commands save their work on KeyboardInterrupt)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    code: int = 0
    try:
        cli_main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        code = 130
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the end be recorded
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.stdout.flush()
        sys.stderr.flush()
        _record(run_id, log_path, code)
    raise SystemExit(code)


def _record(run_id: str, log_path: str, code: int) -> None:
    status = "done" if code == 0 else ("stopped" if code in (130, 143) else "failed")
    with Store() as store:
        row = store.runs.find(run_id)
        if row is not None and row["status"] == "running":
            error = None if status == "done" else (tail(Path(log_path)) or f"exit code {code}")
            store.runs.finish(run_id, status, error=error)


if __name__ == "__main__":
    main()
