"""Real-data competitions in MLE-bench's layout, built from the datasets that ship with scikit-learn.

Each builder writes one competition folder as MLE-bench keeps it (``config.yaml``, ``description.md``,
``leaderboard.csv``, ``prepared/public/{train,test,sample_submission}.csv``, ``prepared/private/test.csv``) with
the real rows of a real dataset, split deterministically. The layouts are the ones that tripped the import:

- :func:`wine` — the label in the *second* column and a one-hot probability submission whose columns are the
  class names (MLE-bench's leaf-classification layout), graded by multi-class log loss;
- :func:`digits` — 10 classes over 64 pixel columns; ``kaggle=True`` gives Kaggle's digit-recognizer layout
  (``test.csv`` has no id; ``ImageId`` exists only in the sample submission, in row order, and the submission's
  ``Label`` is ``train.csv``'s ``label``);
- :func:`breast_cancer` — a binary task, string labels graded by accuracy, or 0/1 graded by ROC-AUC;
- :func:`diabetes` — regression graded by RMSE.

Every builder takes ``leaderboard=False`` (no ``leaderboard.csv``) and ``grader=`` (any grader name, e.g. one
the project does not know). :func:`junk` overwrites a file with binary bytes; :func:`lite_data_dir` lays out an
MLE-bench *data directory* holding two of the lite competitions plus one that was never prepared.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

#: the real cultivars of scikit-learn's wine data (class_0, class_1, class_2)
CULTIVARS = ["barolo", "grignolino", "barbera"]
WINE = ("# Wine cultivars\n\nPredict the cultivar of each wine (barolo, grignolino, barbera) from 13 chemical "
        "measurements. Submit one probability per cultivar: `id,barolo,grignolino,barbera`. Graded by multi-class "
        "log loss.\n")
DIABETES = ("# Diabetes progression\n\nTen baseline variables (age, sex, body mass index, blood pressure, six serum "
            "measurements) per patient. Predict `progression`, a measure of disease progression one year later. "
            "Submit `id,progression`. Graded by RMSE.\n")
#: bytes no CSV reader accepts: a PNG signature, NULs and invalid UTF-8
JUNK = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\xfa\x00\x81\x82" * 64


def _split(n: int, n_train: int, n_test: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return order[:n_train], order[n_train:n_train + n_test]


def _frame(X: pd.DataFrame, idx: np.ndarray, before: dict | None = None, after: dict | None = None) -> pd.DataFrame:
    """Rows ``idx`` of the features ``X``: the ``before`` columns (id, label…), the features, the ``after`` ones."""
    parts = [pd.DataFrame(before)] if before else []
    parts.append(X.iloc[idx].reset_index(drop=True))
    if after:
        parts.append(pd.DataFrame(after))
    return pd.concat(parts, axis=1)


def _board(low: float, high: float, seed: int, n: int = 40) -> list[float]:
    """A leaderboard of ``n`` scores spread between ``low`` and ``high`` (rounded as Kaggle shows them)."""
    return [round(float(s), 5) for s in np.random.default_rng(seed).uniform(low, high, n)]


def write_competition(root: Path, comp_id: str, *, name: str, grader: str, train: pd.DataFrame,
                      test: pd.DataFrame, sample: pd.DataFrame, answers: pd.DataFrame, description: str,
                      board: tuple[float, float, int] | None) -> Path:
    """One MLE-bench competition folder under ``root``; ``board`` = (low, high, RNG seed) of a 40-entry
    leaderboard, or None for none. Returns the folder."""
    folder = root / comp_id
    public, private = folder / "prepared" / "public", folder / "prepared" / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    config = {"id": comp_id, "name": name, "competition_type": "simple", "awards_medals": True, "prizes": None,
              "description": f"mlebench/competitions/{comp_id}/description.md",
              "dataset": {"answers": f"{comp_id}/prepared/private/test.csv",
                          "sample_submission": f"{comp_id}/prepared/public/sample_submission.csv"},
              "grader": {"name": grader, "grade_fn": f"mlebench.competitions.{comp_id}.grade:grade"},
              "preparer": f"mlebench.competitions.{comp_id}.prepare:prepare"}
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "description.md").write_text(description)
    (public / "description.md").write_text(description)
    train.to_csv(public / "train.csv", index=False)
    test.to_csv(public / "test.csv", index=False)
    sample.to_csv(public / "sample_submission.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    if board is not None:
        scores = _board(*board)
        pd.DataFrame({"scoreNullable": scores, "teamId": range(1, len(scores) + 1), "hasTeamName": True,
                      "submissionDate": "2020-01-01", "score": scores, "hasScore": True}).to_csv(
            folder / "leaderboard.csv", index=False)
    return folder


def wine(root: Path, comp_id: str = "wine-cultivars", *, leaderboard: bool = True,
         grader: str = "multi-class-log-loss") -> Path:
    """Wine: ``train.csv`` = id, cultivar, 13 measurements; submission = id + one probability per cultivar."""
    from sklearn.datasets import load_wine

    data = load_wine(as_frame=True)
    X = data.data.rename(columns=lambda c: c.replace("/", "_"))
    y = np.array(CULTIVARS)[data.target.to_numpy()]
    tr, te = _split(len(X), 118, 60, seed=1)
    ids = np.arange(1, len(X) + 1)
    train = _frame(X, tr, {"id": ids[tr], "cultivar": y[tr]})
    test = _frame(X, te, {"id": ids[te]})
    sample = pd.DataFrame({"id": ids[te], **{c: 1 / 3 for c in CULTIVARS}})
    answers = pd.DataFrame({"id": ids[te], **{c: (y[te] == c).astype(int) for c in CULTIVARS}})
    return write_competition(root, comp_id, name="Wine cultivars", grader=grader, train=train, test=test,
                             sample=sample, answers=answers, description=WINE,
                             board=(0.03, 0.9, 2) if leaderboard else None)


def digits(root: Path, comp_id: str = "digits", *, kaggle: bool = False, leaderboard: bool = True,
           grader: str = "categorization-accuracy") -> Path:
    """Digits: 8×8 images as 64 pixel columns, 10 classes. ``kaggle=True``: the digit-recognizer layout."""
    from sklearn.datasets import load_digits

    data = load_digits(as_frame=True)
    X = data.data.astype(int).set_axis([f"pixel{i}" for i in range(64)], axis=1)
    y = data.target.to_numpy()
    tr, te = _split(len(X), 150, 60, seed=3)
    if kaggle:
        train = _frame(X, tr, {"label": y[tr]})
        test = _frame(X, te)
        image_id = np.arange(1, len(te) + 1)
        sample = pd.DataFrame({"ImageId": image_id, "Label": 0})
        answers = pd.DataFrame({"ImageId": image_id, "Label": y[te]})
        fmt = "`ImageId,Label`, one row per test image in the order of test.csv (ImageId counts from 1)"
    else:
        ids = np.arange(len(X))
        train = _frame(X, tr, {"id": ids[tr], "label": y[tr]})
        test = _frame(X, te, {"id": ids[te]})
        sample = pd.DataFrame({"id": ids[te], "label": 0})
        answers = pd.DataFrame({"id": ids[te], "label": y[te]})
        fmt = "`id,label`"
    desc = (f"# Handwritten digits\n\nEach row is an 8x8 image of a handwritten digit as 64 pixel intensities "
            f"(0-16). Predict the digit (0-9). Submit {fmt}. Graded by accuracy.\n")
    return write_competition(root, comp_id, name="Handwritten digits", grader=grader, train=train, test=test,
                             sample=sample, answers=answers, description=desc,
                             board=(0.80, 0.995, 4) if leaderboard else None)


def breast_cancer(root: Path, comp_id: str = "breast-cancer", *, leaderboard: bool = True, grader: str = "accuracy",
                  proba: bool = False) -> Path:
    """Breast cancer: 30 measurements; ``diagnosis`` malignant/benign (accuracy), or ``target`` 0/1 (ROC-AUC)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    X = data.data.rename(columns=lambda c: c.replace(" ", "_"))
    y = data.target.to_numpy()
    tr, te = _split(len(X), 150, 80, seed=5)
    ids = np.arange(10_000, 10_000 + len(X))
    label, values = ("target", 1 - y) if proba else ("diagnosis", np.array(data.target_names)[y])
    train = _frame(X, tr, {"id": ids[tr]}, {label: values[tr]})
    test = _frame(X, te, {"id": ids[te]})
    sample = pd.DataFrame({"id": ids[te], label: 0.5 if proba else "benign"})
    answers = pd.DataFrame({"id": ids[te], label: values[te]})
    what = "the probability that the tumour is malignant (`target` = 1)" if proba else \
        "the diagnosis, `malignant` or `benign`"
    desc = (f"# Breast cancer\n\nEach row is one tumour described by 30 measurements of cell nuclei. Predict "
            f"{what}. Submit `id,{label}`.\n")
    low, high = (0.85, 0.999) if proba else (0.80, 0.99)
    return write_competition(root, comp_id, name="Breast cancer diagnosis", grader=grader, train=train, test=test,
                             sample=sample, answers=answers, description=desc,
                             board=(low, high, 6) if leaderboard else None)


def diabetes(root: Path, comp_id: str = "diabetes", *, leaderboard: bool = True,
             grader: str = "root-mean-squared-error") -> Path:
    """Diabetes: 10 baseline variables; predict disease progression one year later (RMSE)."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes(as_frame=True, scaled=False)
    X, y = data.data, data.target.to_numpy()
    tr, te = _split(len(X), 150, 80, seed=7)
    ids = np.arange(len(X))
    train = _frame(X, tr, {"id": ids[tr]}, {"progression": y[tr]})
    test = _frame(X, te, {"id": ids[te]})
    sample = pd.DataFrame({"id": ids[te], "progression": float(np.median(y[tr]))})
    answers = pd.DataFrame({"id": ids[te], "progression": y[te]})
    return write_competition(root, comp_id, name="Diabetes progression", grader=grader, train=train, test=test,
                             sample=sample, answers=answers, description=DIABETES,
                             board=(52.0, 75.0, 8) if leaderboard else None)


def junk(path: Path) -> Path:
    """Overwrite ``path`` with binary bytes (what a wrong download or a disk error leaves)."""
    path.write_bytes(JUNK)
    return path


def lite_data_dir(root: Path) -> Path:
    """An MLE-bench data directory with two lite competitions prepared from shipped data (leaf-classification's
    layout from wine, tabular-playground-series-may-2022's from breast cancer) and one downloaded but never
    prepared (spooky-author-identification: ``raw/`` only)."""
    root.mkdir(parents=True, exist_ok=True)
    wine(root, "leaf-classification")
    breast_cancer(root, "tabular-playground-series-may-2022", grader="auc-roc", proba=True)
    (root / "spooky-author-identification" / "raw").mkdir(parents=True)
    (root / "spooky-author-identification" / "raw" / "train.csv").write_text("id,text,author\n")
    return root
