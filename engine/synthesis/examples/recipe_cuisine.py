"""Recipe cards: which cuisine does a recipe come from?

Each recipe lists its ingredients and a short method. Every cuisine has signature ingredients and techniques,
shared pantry items (salt, onion, oil) appear everywhere, and one recipe in six is a fusion dish that borrows
from another cuisine, so words are strong but not perfect evidence. Prediction: one probability per cuisine.
"""

import argparse
import os

import numpy as np
import pandas as pd

CUISINES = {
    "italian": (["basil", "parmesan", "oregano", "mozzarella", "pancetta", "ricotta"], ["simmer the sauce", "toss with pasta"]),
    "japanese": (["miso", "mirin", "nori", "dashi", "sesame", "wasabi"], ["steam the rice", "grill over charcoal"]),
    "mexican": (["cumin", "jalapeno", "tortilla", "cilantro", "lime", "chipotle"], ["char the peppers", "warm the tortillas"]),
}
PANTRY = ["salt", "onion", "garlic", "oil", "pepper", "water", "sugar", "butter", "tomato", "rice"]
PRIORS = [0.42, 0.32, 0.26]


def recipe(rng, cuisine):
    names = list(CUISINES)
    source = cuisine if rng.random() > 1 / 6 else names[int(rng.integers(len(names)))]
    signature, methods = CUISINES[source]
    own = list(rng.choice(CUISINES[cuisine][0], size=int(rng.integers(1, 3)), replace=False))
    borrowed = list(rng.choice(signature, size=int(rng.integers(0, 3)), replace=False))
    pantry = list(rng.choice(PANTRY, size=int(rng.integers(3, 6)), replace=False))
    words = own + borrowed + pantry
    rng.shuffle(words)
    method = methods[int(rng.integers(len(methods)))]
    return f"ingredients: {', '.join(words)}. method: {method} and season to taste."


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=160)
    ap.add_argument("--n-test", type=int, default=240)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n_train + args.n_test
    names = list(CUISINES)
    cuisine = rng.choice(names, size=n, p=PRIORS)
    frame = pd.DataFrame({
        "recipe_id": [f"r{v:06d}" for v in rng.choice(10**6, size=n, replace=False)],
        "recipe_text": [recipe(rng, c) for c in cuisine],
        "prep_minutes": rng.gamma(3, 12, size=n).round(0).astype(int),
    })
    train, test = frame.iloc[: args.n_train].copy(), frame.iloc[args.n_train:]
    train["cuisine"] = cuisine[: args.n_train]
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    os.makedirs(public, exist_ok=True)
    os.makedirs(private, exist_ok=True)
    train.to_csv(os.path.join(public, "train.csv"), index=False)
    test.to_csv(os.path.join(public, "test.csv"), index=False)
    sample = pd.DataFrame({"recipe_id": test["recipe_id"]})
    answers = sample.copy()
    for name in names:
        sample[name] = round(1 / len(names), 6)
        answers[name] = (cuisine[args.n_train:] == name).astype(int)
    sample.to_csv(os.path.join(public, "sample_submission.csv"), index=False)
    answers.to_csv(os.path.join(private, "answers.csv"), index=False)


if __name__ == "__main__":
    main()
