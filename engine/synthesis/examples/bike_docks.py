"""Bike-share docks: how many bikes will be rented from a dock in the next hour?

Rentals follow the commute: weekday mornings and evenings peak, weekends peak at midday. Mild weather raises
demand (best near 22 °C), rain lowers it sharply, and big docks near a train station see more traffic. The
noise is Poisson, as counts are. Usage: python generator.py --out DIR --seed S [--n-train N] [--n-test N]
"""

import argparse
import os

import numpy as np
import pandas as pd

NEIGHBOURHOODS = ["centre", "university", "riverside", "suburb"]
NEIGHBOURHOOD_LIFT = {"centre": 1.3, "university": 1.15, "riverside": 1.0, "suburb": 0.7}


def hourly_profile(hour, weekend):
    commute = np.exp(-((hour - 8) ** 2) / 3) + 0.9 * np.exp(-((hour - 18) ** 2) / 4)
    leisure = np.exp(-((hour - 14) ** 2) / 10)
    return np.where(weekend == 1, 0.3 + 1.2 * leisure, 0.3 + 1.6 * commute)


def docks(rng, n):
    hour = rng.integers(5, 24, size=n)
    weekend = (rng.random(n) < 2 / 7).astype(int)
    temperature_c = rng.normal(15, 7, size=n).round(1)
    rain_mm = np.where(rng.random(n) < 0.25, rng.gamma(1.5, 1.5, size=n), 0.0).round(1)
    capacity = rng.choice([12, 16, 20, 28], size=n)
    neighbourhood = rng.choice(NEIGHBOURHOODS, size=n)
    near_station = (rng.random(n) < 0.3).astype(int)
    comfort = np.exp(-((temperature_c - 22) ** 2) / 120)
    lift = np.array([NEIGHBOURHOOD_LIFT[v] for v in neighbourhood])
    rate = (capacity / 1.5 * hourly_profile(hour, weekend) * (0.4 + comfort) * lift * np.exp(-0.35 * rain_mm)
            * (1 + 0.5 * near_station))
    rentals = rng.poisson(rate)
    frame = pd.DataFrame({"hour": hour, "weekend": weekend, "temperature_c": temperature_c, "rain_mm": rain_mm,
                          "dock_capacity": capacity, "neighbourhood": neighbourhood, "near_station": near_station})
    return frame, rentals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=180)
    ap.add_argument("--n-test", type=int, default=260)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    frame, rentals = docks(rng, n)
    frame.insert(0, "dock_hour_id", [f"D{v:07d}" for v in rng.choice(10**7, size=n, replace=False)])
    train, test = frame.iloc[: args.n_train].copy(), frame.iloc[args.n_train:]
    train["rentals_next_hour"] = rentals[: args.n_train]
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    os.makedirs(public, exist_ok=True)
    os.makedirs(private, exist_ok=True)
    train.to_csv(os.path.join(public, "train.csv"), index=False)
    test.to_csv(os.path.join(public, "test.csv"), index=False)
    median = float(np.median(rentals[: args.n_train]))
    pd.DataFrame({"dock_hour_id": test["dock_hour_id"], "rentals_next_hour": median}).to_csv(
        os.path.join(public, "sample_submission.csv"), index=False)
    pd.DataFrame({"dock_hour_id": test["dock_hour_id"], "rentals_next_hour": rentals[args.n_train:]}).to_csv(
        os.path.join(private, "answers.csv"), index=False)


if __name__ == "__main__":
    main()
