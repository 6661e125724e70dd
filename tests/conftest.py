"""Shared fixtures: a tmp data dir (SANDMLE_HOME), a store on it, and a CLI runner that goes through main()."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

#: the start of a script that runs an episode on the environment folder argv[1] and records every file it opens
#: under private/ (``seen``): what the score tool tests audit
PRIVATE_OPEN_AUDIT = r"""
import json, sys
from pathlib import Path
private = str(Path(sys.argv[1]).resolve() / "private")
seen = []
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)):
        path = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if str(Path(path).resolve()).startswith(private):
            seen.append(path)
sys.addaudithook(hook)
from engine.envs.layout import EnvSpec
from engine.agents.env import MLEEnv
from engine.agents.format import ToolCall
from engine.sandbox import get_backend
"""

# never let a test touch the user's real data dir or config; the default one is this process's own (the workers of
# `make test` run side by side, each with its own)
if "SANDMLE_HOME" not in os.environ:
    _DEFAULT_HOME = tempfile.mkdtemp(prefix="sandmle-pytest-default-")
    os.environ["SANDMLE_HOME"] = _DEFAULT_HOME
    atexit.register(shutil.rmtree, _DEFAULT_HOME, True)


#: seconds each test module took in a measured run of the suite (``make test-times`` rewrites it): ``make test``'s
#: workers (pytest-xdist, --dist loadfile --no-loadscope-reorder) take the modules in this order, longest first, so
#: the long ones start early and the short ones fill in at the end (a module it does not name counts as a median one)
MODULE_TIMES = Path(__file__).with_name("module_times.json")
#: set (to 1) by ``make test-times``: the run writes MODULE_TIMES when it ends
WRITE_TIMES = "SANDMLE_WRITE_TEST_TIMES"
_spent: dict[str, float] = {}


def _module(nodeid: str) -> str:
    return nodeid.split("::")[0]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules longest first by MODULE_TIMES; without that file, the modules with the most slow tests first (a
    stable sort either way: each module's tests keep their own order)."""
    if MODULE_TIMES.is_file():
        times = {k: float(v) for k, v in json.loads(MODULE_TIMES.read_text()).items()}
    else:
        times = {}
        for item in items:
            times[_module(item.nodeid)] = times.get(_module(item.nodeid), 0.0) + \
                (item.get_closest_marker("slow") is not None)
    known = sorted(times.values())
    median = known[len(known) // 2] if known else 0.0
    items.sort(key=lambda item: -times.get(_module(item.nodeid), median))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _spent[_module(report.nodeid)] = _spent.get(_module(report.nodeid), 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under ``make test-times``, the time of each module (set-up, calls and teardown of its tests) into MODULE_TIMES,
    written by the controlling process (xdist's workers report to it) after a whole run (passed or with failures;
    not one interrupted or with no test collected). A run of some modules updates theirs; a module gone is dropped."""
    whole = exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    if os.environ.get(WRITE_TIMES) and not hasattr(session.config, "workerinput") and whole and _spent:
        old = json.loads(MODULE_TIMES.read_text()) if MODULE_TIMES.is_file() else {}
        times = {k: v for k, v in {**old, **{k: round(v, 1) for k, v in _spent.items()}}.items()
                 if (ROOT / k).is_file()}
        MODULE_TIMES.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("SANDMLE_HOME", str(path))
    monkeypatch.delenv("SANDMLE_CONFIG", raising=False)
    return path


@pytest.fixture
def store(home):
    from store import Store

    s = Store(home / "sandmle.db")
    yield s
    s.close()


@contextmanager
def store_at(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A store on a module-scoped fixture's data dir, with SANDMLE_HOME pointed at it for one test."""
    from store import Store

    monkeypatch.setenv("SANDMLE_HOME", str(home))
    with Store(home / "sandmle.db") as s:
        yield s


@pytest.fixture
def seeded_store(store):
    from engine.seeds.load import load_shipped

    load_shipped(store)
    return store


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


def cli_runner(capsys):
    """Run `sandmle ARGS` in-process through main() (exit codes and one-line errors included)."""
    from workbench.cli import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = 0
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def run_cli(home, capsys):
    """`cli_runner` on a fresh tmp data dir (SANDMLE_HOME)."""
    return cli_runner(capsys)


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray for the whole session (2 CPUs, no dashboard, no token): Ray executors find it running."""
    ray = pytest.importorskip("ray")
    from engine.executors.ray import start_ray

    started = not ray.is_initialized()
    if started:
        start_ray(num_cpus=2)
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture
def seed_copy(tmp_path):
    """A writable copy of one shipped seed folder, for bad-input tests."""
    def make(seed_id: str = "author-style") -> Path:
        dest = tmp_path / "seedcopy" / seed_id
        shutil.copytree(ROOT / "seeds" / seed_id, dest)
        return dest

    return make


@pytest.fixture(scope="session")
def docker_daemon():
    """A Docker daemon for the docker-backend tests: the one that answers, else one started for the session (and
    stopped after it when no other test session uses it); the tests skip with the reason where neither works."""
    from dockerd import Daemon

    daemon = Daemon()
    reason = daemon.acquire()
    if reason is not None:
        daemon.release()
        pytest.skip(reason)
    yield
    daemon.release()
