"""Folders that come in hold regular files and folders only (issue 33): a symbolic link (to a host file, or to
another environment's answers), a device file, a FIFO or a socket in an MLE-bench competition, a task of the
paper's layout, a seed folder or an environment folder is refused with one line naming the path — the store is
unchanged and nothing is copied. What a generator program writes is taken out of its sandbox as regular files
only. (Exports: tests/test_exchange.py.)"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import tempfile
from pathlib import Path

import pytest

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"
SPOOKY = DATA / "mlebench" / "spooky-mini"
SEED = DATA / "seeds" / "shipment-spoilage"
EVALUATOR = '''import argparse, json
import pandas as pd
p = argparse.ArgumentParser(); p.add_argument("--submission_path", required=True); a = p.parse_args()
ans = pd.read_csv("answer.csv"); sub = pd.read_csv(a.submission_path)
m = ans.merge(sub, on=ans.columns[0], suffixes=("", "_p"))
print(json.dumps({"score": float((m.iloc[:, 1] == m.iloc[:, 2]).mean()), "is_lower_better": False}))
'''


def _dump(home: Path) -> list[str]:
    with sqlite3.connect(home / "sandmle.db") as con:
        return list(con.iterdump())


def _files(home: Path) -> set[str]:
    """Every file under the data dir (folders a command makes empty at its start aside) but the store itself."""
    return {str(p.relative_to(home)) for p in home.rglob("*")
            if not p.name.startswith("sandmle.db") and (p.is_symlink() or not p.is_dir())}


@pytest.fixture
def cli(run_cli, home):
    """The CLI on a data dir that has been opened once (the shipped seeds are in): what a refusal must leave."""
    assert run_cli("seeds", "list").code == 0
    return run_cli


def _refused(cli, home: Path, args: tuple[str, ...], path: Path, kind: str) -> None:
    before, files = _dump(home), _files(home)
    res = cli(*args)
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert res.code == 2 and len(lines) == 1, (res.code, res.out[-500:], res.err[-1500:])
    assert lines[0].startswith(f"error: {path}: {kind}") and "refused, nothing was copied or stored" in lines[0]
    assert _dump(home) == before  # the store unchanged
    assert _files(home) == files  # nothing copied
    assert "Traceback" not in res.err


def _mlebench_with(tmp_path: Path, make) -> tuple[Path, Path]:
    comp = tmp_path / "comps" / "spooky-mini"
    shutil.copytree(SPOOKY, comp)
    where = comp / "prepared" / "public" / "extra.csv"
    make(where)
    return comp, where


def test_mlebench_folder_with_a_link_in_public_is_refused(cli, home, tmp_path):
    # a link to another environment's answers (here: the competition's own), as a shipped folder could carry
    comp, link = _mlebench_with(tmp_path, lambda p: p.symlink_to(SPOOKY.resolve() / "prepared" / "private" /
                                                                   "test.csv"))
    kind = f"a symbolic link (to {SPOOKY.resolve()}/prepared/private/test.csv) in an MLE-bench competition folder"
    _refused(cli, home, ("seeds", "import", str(comp)), link, kind)
    _refused(cli, home, ("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(comp)), link, kind)
    sub = tmp_path / "sub.csv"
    shutil.copy(SPOOKY / "prepared" / "public" / "sample_submission.csv", sub)
    _refused(cli, home, ("grade", str(comp), str(sub)), link, kind)
    # the folder of competitions too (the link one level down)
    _refused(cli, home, ("seeds", "import", str(comp.parent)), link, kind)


def test_a_linked_folder_a_fifo_a_socket_and_a_device_are_refused(cli, home, tmp_path):
    comp, where = _mlebench_with(tmp_path, lambda p: p.parent.joinpath("more").symlink_to("/etc"))
    _refused(cli, home, ("seeds", "import", str(comp)), where.parent / "more", "a symbolic link (to /etc)")
    (where.parent / "more").unlink()
    os.mkfifo(where)
    _refused(cli, home, ("seeds", "import", str(comp)), where, "a FIFO (named pipe)")
    where.unlink()
    # a socket's path must fit sun_path (108 bytes): bound in a short folder, then moved into place
    short = Path(tempfile.mkdtemp(prefix="sock", dir="/tmp")) / "s"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(short))
        os.rename(short, where)
        _refused(cli, home, ("seeds", "import", str(comp)), where, "a socket")
    finally:
        sock.close()
        where.unlink(missing_ok=True)
        shutil.rmtree(short.parent, ignore_errors=True)
    if os.geteuid() == 0:
        import stat

        os.mknod(where, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
        _refused(cli, home, ("seeds", "import", str(comp)), where, "a character device")
        where.unlink()
    assert cli("seeds", "import", str(comp)).code == 0  # the same folder, plain again: imported


def test_paper_task_with_a_link_in_public_is_refused(cli, home, tmp_path):
    task = tmp_path / "paper" / "tiny-paper"
    public = task / "prepared" / "public"
    shutil.copytree(TINY / "public", public)
    shutil.copy(TINY / "private" / "answers.csv", public / "answer.csv")
    (public / "evaluator.py").write_text(EVALUATOR)
    link = public / "hint.csv"
    link.symlink_to(TINY.resolve() / "private" / "answers.csv")
    kind = f"a symbolic link (to {TINY.resolve()}/private/answers.csv) in a task folder"
    _refused(cli, home, ("envs", "import", str(task)), link, kind)
    _refused(cli, home, ("envs", "import", str(task.parent)), link, kind)


def test_seed_folder_with_a_link_is_refused(cli, home, tmp_path):
    seed = tmp_path / "seeds" / "shipment-spoilage"
    shutil.copytree(SEED, seed)
    (seed / "description.md").unlink()
    (seed / "description.md").symlink_to("/etc/hostname")
    _refused(cli, home, ("seeds", "import", str(seed)), seed / "description.md",
             "a symbolic link (to /etc/hostname) in a seed folder")


def test_environment_folder_with_a_link_is_refused(cli, home, tmp_path):
    env = tmp_path / "envs" / "tiny-tabular"
    shutil.copytree(TINY, env)
    link = env / "public" / "peek.csv"
    link.symlink_to("../private/answers.csv")
    _refused(cli, home, ("eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", str(env)), link,
             "a symbolic link (to ../private/answers.csv) in an environment folder")


def test_generator_output_with_a_link_or_a_fifo_is_rejected_naming_it(run_cli, home):
    """`envs add`: what the program wrote comes out of its sandbox as regular files only (a link or a FIFO in
    out/public is named in the rejection, and no environment keeps it)."""
    from engine.synthesis.add import add_program
    from store import Store

    assert run_cli("seeds", "import", str(SEED)).code == 0
    program = (DATA / "generators" / "good_tabular_coldchain.py").read_text()
    with Store(home / "sandmle.db") as store:
        for plant, name in (("os.symlink('../private/answers.csv', os.path.join(out, 'public', 'peek.csv'))",
                             "peek.csv"),
                            ("os.mkfifo(os.path.join(out, 'public', 'pipe'))", "pipe")):
            evil = program + ("\nimport os, sys\nout = sys.argv[sys.argv.index('--out') + 1]\n" + plant + "\n")
            outcome = add_program(store, "shipment-spoilage", evil)
            assert outcome.status == "rejected", outcome.to_dict()
            assert f"{name} is not a regular file" in outcome.reason, outcome.reason
        assert not [p for p in (home / "envs").rglob("*") if p.is_symlink() or p.is_fifo()]
