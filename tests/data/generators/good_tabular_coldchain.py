"""Cold-chain vaccine shipments: will a shipment arrive spoiled?

Hand-written test fixture (good, tabular). Spoilage risk rises with the hours the load spent above 8 °C and
with how often the doors were opened, falls with better insulation, and a long route in a hot month makes it
worse. Usage: python generator.py --out DIR --seed S [--n-train N] [--n-test N]
"""

import argparse
import os

import numpy as np
import pandas as pd

INSULATION = ["foam", "vacuum_panel", "phase_change"]
INSULATION_PROTECTION = {"foam": 0.0, "vacuum_panel": 0.8, "phase_change": 1.4}


def shipments(rng, n):
    route_km = rng.gamma(shape=3.0, scale=180.0, size=n).round(1)
    month = rng.integers(1, 13, size=n)
    summer = np.isin(month, [6, 7, 8]).astype(float)
    ambient_c = (12 + 14 * summer + rng.normal(0, 4, size=n)).round(1)
    insulation = rng.choice(INSULATION, size=n, p=[0.5, 0.3, 0.2])
    door_openings = rng.poisson(1.5 + route_km / 400)
    hours_above_8c = np.clip(rng.gamma(1.2, 1.0 + np.maximum(ambient_c - 15, 0) / 6, size=n), 0, None).round(2)
    logger_battery = rng.uniform(20, 100, size=n).round(0)  # irrelevant to spoilage
    frame = pd.DataFrame({
        "route_km": route_km, "month": month, "ambient_c": ambient_c, "insulation": insulation,
        "door_openings": door_openings, "hours_above_8c": hours_above_8c, "logger_battery_pct": logger_battery,
    })
    protection = np.array([INSULATION_PROTECTION[v] for v in insulation])
    risk = (-2.2 + 0.9 * hours_above_8c + 0.35 * door_openings - protection
            + 0.6 * summer * (route_km > 600) + rng.normal(0, 0.9, size=n))
    spoiled = (rng.random(n) < 1 / (1 + np.exp(-risk))).astype(int)
    return frame, spoiled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=160)
    ap.add_argument("--n-test", type=int, default=240)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    frame, spoiled = shipments(rng, n)
    frame.insert(0, "shipment_id", [f"SH{v:06d}" for v in rng.choice(900_000, size=n, replace=False)])
    train, test = frame.iloc[: args.n_train].copy(), frame.iloc[args.n_train:].copy()
    train["spoiled"] = spoiled[: args.n_train]
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    os.makedirs(public, exist_ok=True)
    os.makedirs(private, exist_ok=True)
    train.to_csv(os.path.join(public, "train.csv"), index=False)
    test.to_csv(os.path.join(public, "test.csv"), index=False)
    pd.DataFrame({"shipment_id": test["shipment_id"], "spoiled": 0.5}).to_csv(
        os.path.join(public, "sample_submission.csv"), index=False)
    pd.DataFrame({"shipment_id": test["shipment_id"], "spoiled": spoiled[args.n_train:]}).to_csv(
        os.path.join(private, "answers.csv"), index=False)


if __name__ == "__main__":
    main()
