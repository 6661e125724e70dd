"""Generator of the tiny-tabular test environment (run: python generator.py; same seed → same files)."""
import json
from pathlib import Path

import numpy as np
import pandas as pd

rng = np.random.default_rng(7)
here = Path(__file__).parent
n_train, n_test = 120, 40
n = n_train + n_test
x1, x2, x3 = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
color = rng.choice(["red", "green", "blue"], size=n)
logit = 1.8 * x1 - 1.2 * x2 + 0.8 * (color == "red") + 0.3 * rng.normal(size=n)
label = np.where(logit > 0.5, "yes", "no")
x3[rng.random(n) < 0.1] = np.nan
df = pd.DataFrame({"id": [f"r{i:04d}" for i in range(n)], "x1": x1.round(4), "x2": x2.round(4),
                   "x3": x3.round(4), "color": color, "label": label})
train, test = df.iloc[:n_train], df.iloc[n_train:]
(here / "public").mkdir(exist_ok=True)
(here / "private").mkdir(exist_ok=True)
train.to_csv(here / "public/train.csv", index=False)
test.drop(columns=["label"]).to_csv(here / "public/test.csv", index=False)
pd.DataFrame({"id": test["id"], "label": "no"}).to_csv(here / "public/sample_submission.csv", index=False)
test[["id", "label"]].to_csv(here / "private/answers.csv", index=False)
(here / "public/description.md").write_text(
    "# Will the widget pass inspection?\n\nPredict `label` (yes/no) for each row of test.csv from the numeric "
    "measurements x1, x2, x3 (x3 has missing values) and the categorical `color`.\n\nMetric: accuracy (higher is "
    "better). Submission: `id,label` for every test id, like sample_submission.csv.\n")
(here / "private/grade.json").write_text(json.dumps({
    "metric": "accuracy", "lower_is_better": False, "id_column": "id", "target_columns": ["label"],
    "prediction_columns": ["label"], "classes": ["no", "yes"], "task_type": "binary"}, indent=2))
board = [0.6, 0.65, 0.7, 0.72, 0.75, 0.78, 0.8, 0.82, 0.85, 0.875]
(here / "env.json").write_text(json.dumps({
    "id": "tiny-tabular", "title": "Widget inspection (tiny)", "modality": "tabular",
    "leaderboard": [{"name": f"ref-{i}", "score": s} for i, s in enumerate(board)]}, indent=2))
