"""Nothing the agent writes can exhaust the host: a submission is checked for size before it is read or copied
(limit: 20x the sample submission plus a floor), and an oversize one is an invalid submission that says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"
GRADE_AND_MEASURE = """
import json, resource, sys, time
from workbench.cli import main
start = time.monotonic()
try:
    main(["grade", "--json", *sys.argv[1:]])
    code = 0
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "s": time.monotonic() - start,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _grade_in_a_subprocess(submission, home) -> tuple[dict, dict]:
    """(the grade report, {code, s, rss_mb}) of `sandmle grade` run in a fresh interpreter."""
    env = {**os.environ, "SANDMLE_HOME": str(home)}
    out = subprocess.run([sys.executable, "-c", GRADE_AND_MEASURE, str(TINY), str(submission)], env=env,
                         capture_output=True, text=True, timeout=120)
    report, measured = out.stdout.strip().rsplit("\n", 1)
    return json.loads(report), json.loads(measured)


def test_a_sparse_gigabyte_submission_is_refused_before_it_is_read(tmp_path, home):
    from engine.grading import submission_limit

    big = tmp_path / "submission.csv"
    with open(big, "wb") as f:
        f.truncate(2**30)  # 1 GB, sparse: nothing on disk, everything to read
    report, measured = _grade_in_a_subprocess(big, home)
    limit_mb = submission_limit(TINY / "public") / 2**20
    assert report["valid_submission"] is False and report["submission_exists"] is True
    assert report["error"] == f"submission too large (1024.0 MB, limit {limit_mb:.1f} MB)"
    assert measured["code"] == 3
    good = tmp_path / "good.csv"
    shutil.copyfile(TINY / "private" / "answers.csv", good)
    ok_report, baseline = _grade_in_a_subprocess(good, home)
    assert ok_report["valid_submission"] is True
    # reading nothing of the big file: the peak memory is that of grading a tiny valid submission
    assert measured["rss_mb"] < baseline["rss_mb"] + 32, (measured, baseline)


def test_the_limit_is_twenty_times_the_sample_plus_a_floor(tmp_path):
    from engine.grading.grade import FLOOR_BYTES, submission_limit

    sample = (TINY / "public" / "sample_submission.csv").stat().st_size
    assert submission_limit(TINY / "public") == 20 * sample + FLOOR_BYTES
    assert submission_limit(tmp_path) == FLOOR_BYTES  # no sample submission: the floor


@pytest.mark.parametrize("scaffold", ["oneshot"])
def test_an_oversize_submission_in_the_workspace_is_never_copied_out(store, scaffold):
    """A policy writes a sparse 300 MB submission.csv (files over [sandbox] max_file_mb cannot be written): the
    episode's grade says why, and nothing lands in the data dir."""
    from engine.agents.policies.scripted import ScriptedPolicy
    from engine.agents.rollout import run_episode
    from engine.envs.layout import EnvSpec

    class Hog(ScriptedPolicy):
        def act(self, messages, *, rng_seed=None):
            action = super().act(messages, rng_seed=rng_seed)
            hog = "open('submission.csv', 'wb').truncate(300 * 2**20)\nraise SystemExit(0)\n"
            action.text = action.text.replace("```python\n", "```python\n" + hog, 1)
            return action

    traj = run_episode(EnvSpec.from_dir(TINY), Hog(), scaffold=scaffold, store=store, rng_seed=0)
    assert traj.grade["valid_submission"] is False
    assert traj.grade["error"].startswith("submission too large (300.0 MB, limit ")
    assert traj.submission_path is None
    assert not list((store.data_dir / "submissions").glob("*"))
