"""Beehive microphones: is a queen piping in this one-second clip?

Clips are 2,000 float32 samples at 2,000 Hz saved as .npy files under public/train/ and public/test/. Every
hive hums (a 230-260 Hz fundamental plus harmonics, loudness varying by hive) under wind noise. A piping queen
adds two or three short, often faint tone bursts between 400 and 500 Hz; wasps near the entrance add buzzes that are broader
and lower, a distractor. The hive column groups clips of the same hive (they share a hum level).
"""

import argparse
import os

import numpy as np
import pandas as pd

RATE, LENGTH = 2000, 2000


def clip(rng, piping, hum_level):
    t = np.arange(LENGTH) / RATE
    f0 = rng.uniform(230, 260)
    x = hum_level * (np.sin(2 * np.pi * f0 * t) + 0.4 * np.sin(4 * np.pi * f0 * t))
    x += rng.normal(0, 0.6, LENGTH)  # wind
    if rng.random() < 0.3:  # a wasp: a broad low buzz
        start = int(rng.integers(0, LENGTH - 400))
        x[start:start + 400] += 0.8 * np.sin(2 * np.pi * rng.uniform(120, 180) * t[:400]) * rng.uniform(0.5, 1, 400)
    if piping:
        for _ in range(int(rng.integers(2, 4))):
            start, width = int(rng.integers(0, LENGTH - 300)), int(rng.integers(150, 300))
            tone = np.sin(2 * np.pi * rng.uniform(400, 500) * t[:width]) * np.hanning(width)
            x[start:start + width] += rng.uniform(0.35, 0.7) * tone
    return x.astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=120)
    ap.add_argument("--n-test", type=int, default=160)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    hum = rng.uniform(0.3, 1.2, size=6)
    hive = rng.integers(0, 6, size=n)
    piping = (rng.random(n) < 0.3).astype(int)
    ids = [f"c{v:07d}" for v in rng.choice(10**7, size=n, replace=False)]
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    paths = []
    for i in range(n):
        part = "train" if i < args.n_train else "test"
        os.makedirs(os.path.join(public, part), exist_ok=True)
        paths.append(f"{part}/{ids[i]}.npy")
        np.save(os.path.join(public, paths[-1]), clip(rng, piping[i], hum[hive[i]]))
    frame = pd.DataFrame({"clip_id": ids, "clip_path": paths, "hive": hive})
    os.makedirs(private, exist_ok=True)
    train, test = frame.iloc[: args.n_train].copy(), frame.iloc[args.n_train:]
    train["queen_piping"] = piping[: args.n_train]
    train.to_csv(os.path.join(public, "train.csv"), index=False)
    test.to_csv(os.path.join(public, "test.csv"), index=False)
    test[["clip_id"]].assign(queen_piping=0.5).to_csv(os.path.join(public, "sample_submission.csv"), index=False)
    test[["clip_id"]].assign(queen_piping=piping[args.n_train:]).to_csv(os.path.join(private, "answers.csv"),
                                                                       index=False)


if __name__ == "__main__":
    main()
