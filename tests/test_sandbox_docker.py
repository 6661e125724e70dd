"""The docker backend against a real daemon; skipped with the reason where none answers (as on CI here)."""

from __future__ import annotations

import pytest

from engine.errors import SandboxError
from engine.sandbox import Limits, get_backend


def _daemon_reason() -> str | None:
    try:
        get_backend("docker")
    except SandboxError as exc:
        return str(exc)
    return None


REASON = _daemon_reason()


def test_no_daemon_is_a_one_line_error():
    if REASON is None:
        pytest.skip("a Docker daemon answers here")
    assert "Docker daemon" in REASON and "\n" not in REASON


@pytest.mark.skipif(REASON is not None, reason=f"no Docker daemon: {REASON}")
def test_docker_runs_contained(store, tmp_path):
    src = tmp_path / "public"
    src.mkdir()
    (src / "train.csv").write_text("a\n1\n")
    with get_backend("docker", store=store, limits=Limits(timeout_s=20)) as backend, backend.open(src) as ws:
        ok = ws.run(["python", "-c", "print(open('train.csv').read().strip())"])
        assert ok.status == "ok" and ok.stdout_tail.strip() == "a\n1"
        net = ws.run(["python", "-c", "import socket; socket.create_connection(('127.0.0.1', 9), 1)"])
        assert net.status == "error"
        loop = ws.run(["python", "-c", "while True: pass"], limits=Limits(timeout_s=1))
        assert loop.status == "timeout"
        ro = ws.run(["sh", "-c", "echo x > /public/x"])
        assert ro.status == "error"
    assert store.sandbox.get(ok.run_id)["backend"] == "docker"
