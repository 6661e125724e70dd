"""Library loans: will a borrowed book be returned late?  (hand-written test fixture: unlearnable)

The outcome is a coin flip drawn independently of every column, so no model can beat the constant.
"""
import argparse
import os

import numpy as np
import pandas as pd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=160)
    ap.add_argument("--n-test", type=int, default=240)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    loans = pd.DataFrame({
        "loan_id": [f"L{i}" for i in rng.choice(10**6, n, replace=False)],
        "pages": rng.integers(80, 900, n),
        "loan_days": rng.choice([7, 14, 21, 28], n),
        "borrower_age": rng.integers(12, 90, n),
        "renewals": rng.integers(0, 4, n),
        "genre": rng.choice(["novel", "cookbook", "travel", "science", "comics"], n),
    })
    late = rng.integers(0, 2, n)
    os.makedirs(os.path.join(args.out, "public"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "private"), exist_ok=True)
    loans.iloc[: args.n_train].assign(returned_late=late[: args.n_train]).to_csv(
        os.path.join(args.out, "public", "train.csv"), index=False)
    test = loans.iloc[args.n_train:]
    test.to_csv(os.path.join(args.out, "public", "test.csv"), index=False)
    test[["loan_id"]].assign(returned_late=0.5).to_csv(os.path.join(args.out, "public", "sample_submission.csv"),
                                                       index=False)
    test[["loan_id"]].assign(returned_late=late[args.n_train:]).to_csv(
        os.path.join(args.out, "private", "answers.csv"), index=False)


if __name__ == "__main__":
    main()
