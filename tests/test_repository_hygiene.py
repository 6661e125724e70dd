"""No machine paths or test reports in the repository: what is tracked works on any machine and says nothing of the
one that made it (a home folder, a worktree, pytest's temporary folders, a pyenv install)."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

# the patterns are built from pieces so that this file does not hold what it looks for
_S = "/"
MACHINE_PATHS = re.compile("|".join([
    r"(?<![\w.~-])" + _S + r"root" + _S,                        # root's home folder
    r"(?<![\w.~-])" + _S + r"(?:home|Users)" + _S + r"[\w.-]+" + _S,  # someone's home folder
    r"(?<![\w.~-])" + _S + r"work" + _S,                        # the workbench's worktrees on the dev machines
    _S + r"tmp" + _S + r"pytest" + r"-of-",                           # pytest's tmp_path base
    r"\.pyenv" + _S + r"versions" + _S + r"\d",                 # one pyenv install's interpreter
]))

#: test and coverage reports: made by a run, never source
REPORTS = ["snapshot_report*.html", "report*.xml", "junit*.xml", ".coverage", ".coverage.*", "htmlcov/*",
           ".pytest_cache/*"]

#: benchmark results record the machine they ran on by design (python, platform, CPUs, GPU), but not its paths: a
#: result file written with --out names the run's data dir "<data dir>" (engine.bench.run_benchmark)


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing is tracked")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60)
    if out.returncode != 0:
        pytest.skip(f"git ls-files failed: {out.stderr.decode(errors='replace').strip()}")
    return [p for p in out.stdout.decode().split("\0") if p]


def _text(path: str) -> str | None:
    """The file's text, or None for a binary (or vanished) file."""
    try:
        data = (ROOT / path).read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_no_test_reports_are_tracked_and_new_ones_are_ignored():
    tracked = _tracked()
    found = [p for p in tracked for pattern in REPORTS
             if fnmatch.fnmatch(p.rsplit("/", 1)[-1], pattern) or fnmatch.fnmatch(p, pattern)]
    assert found == [], f"test reports are tracked (git rm them; .gitignore ignores them): {found}"
    made = ["snapshot_report.html", "snapshot_report_1.html", "report.xml", "junit.xml", ".coverage",
            ".pytest_cache/v/cache/lastfailed", "htmlcov/index.html"]
    out = subprocess.run(["git", "check-ignore", "--no-index", *made], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert sorted(out.stdout.split()) == sorted(made), f"not ignored: {sorted(set(made) - set(out.stdout.split()))}"


def test_no_machine_paths_in_tracked_files():
    found = []
    for path in _tracked():
        text = _text(path)
        if text is None:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if m := MACHINE_PATHS.search(line):
                found.append(f"{path}:{n}: {m.group(0)!r} in {line.strip()[:120]!r}")
    assert found == [], "machine paths in tracked files (word them for any machine):\n" + "\n".join(found)


def test_the_patterns_catch_what_they_are_for():
    """The check above is only as good as its patterns: each kind of path is caught, ordinary text is not."""
    caught = [_S + "root" + _S + ".pyenv" + _S + "versions" + _S + "3.12.1" + _S + "bin",
              "see " + _S + "home" + _S + "alice" + _S + "x.csv", _S + "Users" + _S + "bob" + _S + "data",
              "cd " + _S + "work" + _S + "main", _S + "tmp" + _S + "pytest" + "-of-" + "root" + _S + "pytest-3",
              "~" + _S + ".pyenv" + _S + "versions" + _S + "3.12.1"]
    passed = ["~/.local/share/sandmle", "$SANDMLE_HOME/envs", "envs/x/home/bench", _S + "tmp" + _S,
              "network" + _S + "work" + _S + "flow", "a" + _S + "root" + _S + "b", "/opt/vllm/bin/vllm",
              "$PYENV_ROOT" + _S + "versions" + _S + "3.12*"]
    assert [s for s in caught if not MACHINE_PATHS.search(s)] == []
    assert [s for s in passed if MACHINE_PATHS.search(s)] == []


def test_screenshots_are_saved_without_the_checkouts_place_on_the_machine(tmp_path):
    """`make screenshots` photographs a real run, whose sandbox log names the interpreter by its full path: the
    captures drop the checkout's folder (and an SVG text run keeps its width per cell)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts" / "screenshots.py")
    assert spec and spec.loader
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        shots = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(shots)
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    root = tmp_path / "checkout"
    line = f"1 $ {root}/.venv/bin/python _step.py"
    assert shots.machine_free(line, root) == "1 $ .venv/bin/python _step.py"
    svg = (f'<text class="r3" x="0" y="337.2" textLength="{12.2 * len(line):g}" clip-path="url(#l)">'
           f'{line.replace(" ", "&#160;")}</text><text x="976" textLength="12.2">&#160;</text>')
    out = shots.machine_free_svg(svg, root)
    assert str(root) not in out and ">1&#160;$&#160;.venv/bin/python&#160;_step.py</text>" in out
    assert f'textLength="{12.2 * len("1 $ .venv/bin/python _step.py"):g}"' in out
    assert out.endswith('<text x="976" textLength="12.2">&#160;</text>')


def test_a_result_file_written_with_out_names_the_data_dir_not_its_path(tmp_path):
    from engine.bench import _without_data_dir

    home = str(tmp_path / "home")
    result = {"summary": {"store": home + "/bench/learn-1/sandmle.db", "runs": [home + "/runs/x", "elsewhere/x"]},
              "note": home + "-other/x"}
    assert _without_data_dir(result, home) == {
        "summary": {"store": "<data dir>/bench/learn-1/sandmle.db", "runs": ["<data dir>/runs/x", "elsewhere/x"]},
        "note": home + "-other/x"}


def test_the_module_times_name_the_test_modules_there_are():
    """tests/module_times.json (written by `make test-times`) orders `make test`'s modules: it names every test
    module and no module that is gone (a renamed one would be scheduled as a median one)."""
    import json

    from conftest import MODULE_TIMES

    times = json.loads(MODULE_TIMES.read_text())
    modules = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")}
    assert set(times) == modules, (sorted(set(times) - modules), sorted(modules - set(times)))
    assert all(isinstance(v, (int, float)) and v >= 0 for v in times.values())
