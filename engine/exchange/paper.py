"""One environment in the SandMLE paper's layout (public repo Tonyzhou98/SandMLE, examples/deepresearch/DATA.md),
the layout its trainer (rLLM on verl) and its score tool read::

    <id>/prepared/public/description.md, train.csv, test.csv, sample_submission.csv, media folders
    <id>/prepared/public/evaluator.py    the standalone grader: ``python evaluator.py --submission_path P`` with
                                         the working directory in public/ prints one JSON object (score,
                                         is_lower_better, gold/silver/bronze/median thresholds, ...)
    <id>/prepared/private/answer.csv     the hidden answers: beside public/, out of an agent's reach

With ``paper_compatible`` the answers are ``public/answer.csv`` instead, exactly where the paper's tools look; an
agent working in public/ can then read them (the paper's own layout has this leak). The export's folder also gets
``ok_competitions_sanity.json`` (the task ids), the list the paper's ``prepare_train_data`` reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .grader_source import standalone_grader, task_record
from .source import Source

#: the paper's names
EVALUATOR, ANSWERS, OK_LIST = "evaluator.py", "answer.csv", "ok_competitions_sanity.json"
#: what an export with ``--paper-compatible`` says
LEAK_WARNING = ("answer.csv is in prepared/public/, where the paper's tools look: an agent that can read public/ "
                "can read the answers there")


def write_paper_task(src: Source, dest: Path, *, paper_compatible: bool = False, reward: str = "milestone") -> Path:
    """Write ``dest/prepared/{public,private}`` for one environment (``dest`` must not exist)."""
    public = dest / "prepared" / "public"
    shutil.copytree(src.env.public, public)
    task = task_record(src.id, src.env.grade, src.env.thresholds, src.scores, reward, files=".",
                       board=src.env.board)
    (public / EVALUATOR).write_text(standalone_grader(task, name=EVALUATOR), encoding="utf-8")
    if paper_compatible:
        shutil.copyfile(src.env.answers, public / ANSWERS)
    else:
        (dest / "prepared" / "private").mkdir()
        shutil.copyfile(src.env.answers, dest / "prepared" / "private" / ANSWERS)
    return dest
