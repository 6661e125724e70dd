"""Wind turbines: will a turbine need a gearbox repair within a year?  (hand-written test fixture: never ends)

Before drawing the data the program "calibrates" the base rate by bisection, but its stopping rule compares
against a tolerance the loop can never reach, so it spins forever.
"""
import argparse
import os

import numpy as np
import pandas as pd


def calibrate_intercept(target_rate: float) -> float:
    lo, hi = -10.0, 10.0
    while True:  # the tolerance below is never met: the interval stops shrinking at float precision
        mid = (lo + hi) / 2
        rate = 1 / (1 + np.exp(-mid))
        if abs(rate - target_rate) < 0.0:
            return mid
        lo, hi = (mid, hi) if rate < target_rate else (lo, mid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=150)
    ap.add_argument("--n-test", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    intercept = calibrate_intercept(0.3)
    n = args.n_train + args.n_test
    vibration = rng.gamma(2, 1.5, n)
    df = pd.DataFrame({"turbine_id": np.arange(n), "vibration_mm_s": vibration})
    df["repair"] = (rng.random(n) < 1 / (1 + np.exp(-(intercept + vibration)))).astype(int)
    os.makedirs(os.path.join(args.out, "public"), exist_ok=True)
    df.to_csv(os.path.join(args.out, "public", "train.csv"), index=False)


if __name__ == "__main__":
    main()
