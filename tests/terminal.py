"""A real pseudo-terminal for tests that start the product as users do: a command in a tmux session of its own
(its own server socket) at 80x24, its screen read with ``capture-pane``, keys sent with ``send-keys``."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

EXIT = "__sandmle_exit="


class Terminal:
    """``with Terminal(argv, env=..., cwd=...) as term: term.wait_for("forest-cover"); term.press("q")``."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, width: int = 80, height: int = 24):
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not installed (make setup installs it: apt-get install tmux)")
        self.socket = f"sandmle-test-{uuid.uuid4().hex[:8]}"
        # the command's exit status is printed after it ends; the shell then waits so the pane stays readable
        shell = f"{shlex.join(argv)}; echo {EXIT}$?; sleep 600"
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c", str(cwd),
                   *[a for k, v in env.items() for a in ("-e", f"{k}={v}")], shell)

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-L", self.socket, "-f", os.devnull, *args], capture_output=True,
                             text=True, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"tmux {args[0]}: {out.stderr.strip()}")
        return out.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def size(self) -> tuple[int, int]:
        width, height = self._tmux("display-message", "-p", "-t", "t", "#{pane_width} #{pane_height}").split()
        return int(width), int(height)

    def wait_for(self, *texts: str, timeout: float = 60.0) -> str:
        """The screen once it shows every one of ``texts``; on timeout an error with the last screen."""
        deadline, screen = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(t in screen for t in texts):
                return screen
            time.sleep(0.5)
        raise AssertionError(f"after {timeout:.0f}s the terminal does not show {texts!r}; it shows:\n{screen}")

    def press(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def exit_code(self, timeout: float = 30.0) -> int:
        """The command's exit status, once it has ended."""
        screen = self.wait_for(EXIT, timeout=timeout)
        return int(screen.split(EXIT, 1)[1].split()[0])

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)

    def __enter__(self) -> "Terminal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
