"""The score tool grades against rows held out from TRAINING data and provably never reads the test answers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from engine.agents.env import MLEEnv
from engine.agents.format import ToolCall
from engine.agents.score_tool import carve, parse_score
from engine.envs.layout import EnvSpec

from conftest import DATA, PRIVATE_OPEN_AUDIT, ROOT

TINY = DATA / "envs" / "tiny-tabular"


def test_validation_split_comes_from_training_rows_only():
    env = EnvSpec.from_dir(TINY)
    split = carve(env.public, env.grade, key=env.id)
    train = pd.read_csv(TINY / "public" / "train.csv")
    test_ids = set(pd.read_csv(TINY / "public" / "test.csv")["id"])
    val_ids = set(split.answers["id"])
    assert split.n_val == 24 and split.n_train == 96 and len(val_ids) == 24
    assert val_ids <= set(train["id"]) and not (val_ids & test_ids)
    truth = train.set_index("id").loc[sorted(val_ids), "label"]
    assert (split.answers.set_index("id").loc[sorted(val_ids), "label"] == truth).all()
    import io

    val_train = pd.read_csv(io.BytesIO(split.files["val/train.csv"]))
    val_test = pd.read_csv(io.BytesIO(split.files["val/test.csv"]))
    assert list(val_test.columns) == ["id", "x1", "x2", "x3", "color"]  # the test.csv columns: no label
    assert not (set(val_train["id"]) & val_ids) and len(val_train) + len(val_test) == len(train)
    again = carve(env.public, env.grade, key=env.id)
    assert again.files == split.files  # deterministic per environment


def test_probability_tasks_get_one_hot_validation_answers(tmp_path):
    from engine.seeds.competition import env_from_mlebench

    env = env_from_mlebench(DATA / "mlebench" / "spooky-mini", tmp_path)
    split = carve(env.public, env.grade, key=env.id)
    assert list(split.answers.columns) == ["id", "EAP", "HPL", "MWS"]
    assert (split.answers[["EAP", "HPL", "MWS"]].sum(axis=1) == 1).all()


AUDIT = PRIVATE_OPEN_AUDIT + r"""
env = EnvSpec.from_dir(sys.argv[1])          # reads private/grade.json (metadata) here, before the episode
before = len(seen)
e = MLEEnv(env.id, env.public, env.grade, get_backend("local", root=sys.argv[2]))
e.reset()
code = ("import pandas as pd; t = pd.read_csv('val/test.csv'); "
        "pd.DataFrame({'id': t['id'], 'label': 'yes'}).to_csv('val/submission.csv', index=False)")
ran = e.step(ToolCall("python", {"code": code}))
obs = e.step(ToolCall("score", {})).observation
during = seen[before:]
e.close()
from engine.grading import grade
grade(env, None)
import pandas as pd
sub = Path(sys.argv[2]) / "s.csv"
pd.read_csv(env.public / "sample_submission.csv").to_csv(sub, index=False)
grade(env, sub)                              # final grading does read the answers: the hook sees it
print(json.dumps({"during": during, "after": seen[before:], "obs": obs, "ran": ran.observation}))
"""


def test_score_tool_never_opens_private_files(tmp_path):
    out = subprocess.run([sys.executable, "-c", AUDIT, str(TINY), str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["obs"].startswith("validation accuracy = "), res
    assert res["during"] == []  # reset, a python step and the score tool: not one open() under private/
    assert any(p.endswith("answers.csv") for p in res["after"])  # the hook does see private reads


def test_score_tool_works_with_private_removed_and_rejects_test_ids(tmp_path):
    from engine.sandbox import get_backend

    root = tmp_path / "env"
    shutil.copytree(TINY, root)
    env = EnvSpec.from_dir(root)
    shutil.rmtree(root / "private")  # the answers are gone: the score tool must not care
    e = MLEEnv(env.id, env.public, env.grade, get_backend("local", root=tmp_path / "sbx"))
    e.reset()
    e.ws.write_file("val/submission.csv", pd.read_csv(TINY / "private" / "answers.csv").head(24).to_csv(index=False).encode())
    r = e.step(ToolCall("score", {}))
    assert r.observation.startswith("invalid val/submission.csv") and "not in the test set" in r.observation
    good = ("import pandas as pd; t = pd.read_csv('val/train.csv'); v = pd.read_csv('val/test.csv'); "
            "pd.DataFrame({'id': v['id'], 'label': t['label'].mode()[0]}).to_csv('val/submission.csv', index=False)")
    assert e.step(ToolCall("python", {"code": good})).observation.startswith("[exit 0")
    r = e.step(ToolCall("score", {}))
    value = parse_score(r.observation)
    assert value is not None and 0.0 <= value <= 1.0 and r.info["val_score"] == value
    assert e.state.best_val_score == value
    r = e.step(ToolCall("score", {"path": "submission.csv"}))
    assert "grades val/submission.csv only" in r.observation
    e.close()


def test_policy_code_cannot_reach_the_answers_from_the_workspace(tmp_path):
    """Where the machine can confine runs, policy code cannot read the answers; where it cannot, no episode runs at
    all: the backend refuses (tests/test_isolation.py makes such a machine and checks every command refuses)."""
    from engine.errors import IsolationMissing
    from engine.sandbox import get_backend
    from engine.sandbox.features import bwrap_works, detect

    env = EnvSpec.from_dir(TINY)
    if not (detect().namespaces or bwrap_works()):
        with pytest.raises(IsolationMissing, match="no sandbox isolation here"):
            get_backend("local", root=tmp_path)
        return
    backend = get_backend("local", root=tmp_path)
    assert backend.isolation_note in ("jail", "bwrap")
    e = MLEEnv(env.id, env.public, env.grade, backend)
    e.reset()
    code = f"print(open({str(env.answers.resolve())!r}).read()[:50])"
    r = e.step(ToolCall("python", {"code": code}))
    assert not r.observation.startswith("[exit 0") and "r0120" not in r.observation
    r = e.step(ToolCall("python", {"code": "import os; print(os.path.exists('../private'), os.listdir('..'))"}))
    assert "answers" not in r.observation
    e.close()
