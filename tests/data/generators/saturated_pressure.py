"""Boiler inspections: does a boiler fail the pressure test?  (hand-written test fixture: saturated)

The label is a trivial function of one column: a boiler fails exactly when its test pressure exceeds 250 kPa.
Every other column is noise, so any tree model scores perfectly.
"""
import argparse
import os

import numpy as np
import pandas as pd

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--seed", type=int, required=True)
ap.add_argument("--n-train", type=int, default=150)
ap.add_argument("--n-test", type=int, default=220)
args = ap.parse_args()

rng = np.random.default_rng(args.seed)
n = args.n_train + args.n_test
data = pd.DataFrame({"boiler_id": [f"B-{i:05d}" for i in rng.choice(99_999, n, replace=False)],
                     "test_pressure_kpa": rng.uniform(150, 350, n).round(1),
                     "age_years": rng.integers(1, 40, n),
                     "last_service_months": rng.integers(0, 36, n),
                     "flue_temp_c": rng.normal(180, 25, n).round(1),
                     "annual_hours": rng.integers(500, 4000, n),
                     "brand": rng.choice(["vulcan", "thermo", "aquaheat"], n)})
data["failed"] = (data["test_pressure_kpa"] > 250).astype(int)
for d in ("public", "private"):
    os.makedirs(os.path.join(args.out, d), exist_ok=True)
train, test = data[: args.n_train], data[args.n_train:]
train.to_csv(os.path.join(args.out, "public", "train.csv"), index=False)
test.drop(columns="failed").to_csv(os.path.join(args.out, "public", "test.csv"), index=False)
test[["boiler_id"]].assign(failed=0.5).to_csv(os.path.join(args.out, "public", "sample_submission.csv"), index=False)
test[["boiler_id", "failed"]].to_csv(os.path.join(args.out, "private", "answers.csv"), index=False)
