"""Parcel lockers: will a parcel be collected late (after 48 h)?

Hand-written test fixture (leaks the label through the id). The features carry a fair signal, but the ids are
handed out after sorting the parcels by outcome, so late parcels get the high ids: a model that reads the id
number learns the label.
"""
import argparse
import pathlib

import numpy as np
import pandas as pd


def make(seed: int, n_train: int, n_test: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    df = pd.DataFrame({
        "distance_to_home_km": rng.exponential(3.0, n).round(2),
        "parcel_weight_kg": rng.lognormal(0.3, 0.7, n).round(2),
        "delivered_hour": rng.integers(6, 23, n),
        "weekend_delivery": rng.integers(0, 2, n),
        "reminders_sent": rng.integers(0, 4, n),
    })
    logit = (-1.0 + 0.35 * df.distance_to_home_km + 0.9 * df.weekend_delivery - 0.5 * df.reminders_sent
             + 0.08 * (df.delivered_hour - 14) + rng.normal(0, 0.7, n))
    df["collected_late"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    train, test = df.iloc[:n_train].copy(), df.iloc[n_train:].copy()
    # the leak: ids ordered by the label (plus a little jitter), within each split
    for part, offset in ((train, 100), (test, 100 + 3 * n)):
        order = (part["collected_late"] + rng.uniform(0, 0.3, len(part))).rank(method="first").astype(int)
        part.insert(0, "parcel_id", offset + 2 * order)
    answers = test[["parcel_id", "collected_late"]]
    return train, test.drop(columns=["collected_late"]), answers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=140)
    ap.add_argument("--n-test", type=int, default=210)
    args = ap.parse_args()
    (args.out / "public").mkdir(parents=True, exist_ok=True)
    (args.out / "private").mkdir(parents=True, exist_ok=True)
    train, test, answers = make(args.seed, args.n_train, args.n_test)
    train.to_csv(args.out / "public" / "train.csv", index=False)
    test.to_csv(args.out / "public" / "test.csv", index=False)
    answers.assign(collected_late=0.5).to_csv(args.out / "public" / "sample_submission.csv", index=False)
    answers.to_csv(args.out / "private" / "answers.csv", index=False)


if __name__ == "__main__":
    main()
