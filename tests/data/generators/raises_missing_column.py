# Greenhouse tomato yields: is a harvest batch graded premium?  (hand-written test fixture: raises)
# Top-level script style; the sample submission is built from a column name that was never created, so the
# program dies with a KeyError after writing train.csv.
import argparse
import os

import numpy as np
import pandas as pd

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--n-train", type=int, default=120)
p.add_argument("--n-test", type=int, default=180)
a = p.parse_args()
rng = np.random.default_rng(a.seed)
n = a.n_train + a.n_test
df = pd.DataFrame({
    "batch": np.arange(n) + 500,
    "light_hours": rng.normal(14, 2, n).round(1),
    "brix": rng.normal(5, 0.8, n).round(2),
    "irrigation_l": rng.gamma(4, 20, n).round(0),
})
df["premium"] = (rng.random(n) < 1 / (1 + np.exp(-(df["brix"] - 5) * 1.5))).astype(int)
os.makedirs(os.path.join(a.out, "public"), exist_ok=True)
os.makedirs(os.path.join(a.out, "private"), exist_ok=True)
df.iloc[: a.n_train].to_csv(os.path.join(a.out, "public", "train.csv"), index=False)
test = df.iloc[a.n_train:].drop(columns=["premium"])
test.to_csv(os.path.join(a.out, "public", "test.csv"), index=False)
sample = test[["batch_id"]].assign(premium=0.5)
sample.to_csv(os.path.join(a.out, "public", "sample_submission.csv"), index=False)
