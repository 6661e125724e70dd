"""Drone photos of solar panels: is there debris (a leaf or a dropping) on the panel?

Each image is a 32x32 RGB PNG of a blue panel with its grid lines, lit unevenly. Debris is a small pale blob
of 1-2.5 pixels radius somewhere on the panel, often faint; glare spots (a bright streak) are distractors that appear on
clean and dirty panels alike. Media files live in public/train/ and public/test/; the CSVs hold their paths.
"""

import argparse
import os

import numpy as np
import pandas as pd
from PIL import Image

SIZE = 32


def panel(rng, debris):
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    light = 0.8 + 0.2 * rng.random() * (xx + yy) / (2 * SIZE)
    img = np.stack([40 * light, 70 * light, 150 * light], axis=2) + rng.normal(0, 8, (SIZE, SIZE, 3))
    img[::8, :, :] -= 25  # grid lines
    img[:, ::8, :] -= 25
    if rng.random() < 0.4:  # glare streak: a distractor
        row = int(rng.integers(2, SIZE - 2))
        img[row:row + 2, :, :] += 60
    if debris:
        cy, cx, r = int(rng.integers(4, SIZE - 4)), int(rng.integers(4, SIZE - 4)), rng.uniform(1.2, 2.5)
        blob = (yy - cy) ** 2 + (xx - cx) ** 2 <= r ** 2
        contrast = rng.uniform(0.15, 0.6)  # thin or wet debris is faint
        img[blob] = (1 - contrast) * img[blob] + contrast * np.array([170, 160, 120])
    return np.clip(img, 0, 255).astype(np.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=120)
    ap.add_argument("--n-test", type=int, default=180)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    ids = [f"{v:08x}" for v in rng.choice(16**8, size=n, replace=False)]
    debris = (rng.random(n) < 0.35).astype(int)
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    rows = []
    for i in range(n):
        part = "train" if i < args.n_train else "test"
        os.makedirs(os.path.join(public, part), exist_ok=True)
        path = f"{part}/{ids[i]}.png"
        Image.fromarray(panel(rng, debris[i])).save(os.path.join(public, path), format="PNG")
        rows.append({"image_id": ids[i], "image": path, "panel_row": int(rng.integers(1, 9))})
    frame = pd.DataFrame(rows)
    os.makedirs(private, exist_ok=True)
    train, test = frame.iloc[: args.n_train].copy(), frame.iloc[args.n_train:]
    train["has_debris"] = debris[: args.n_train]
    train.to_csv(os.path.join(public, "train.csv"), index=False)
    test.to_csv(os.path.join(public, "test.csv"), index=False)
    test[["image_id"]].assign(has_debris=0.5).to_csv(os.path.join(public, "sample_submission.csv"), index=False)
    test[["image_id"]].assign(has_debris=debris[args.n_train:]).to_csv(os.path.join(private, "answers.csv"),
                                                                      index=False)


if __name__ == "__main__":
    main()
