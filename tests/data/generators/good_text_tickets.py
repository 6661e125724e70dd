"""Support tickets of a broadband provider: will the ticket be escalated to a supervisor?

Hand-written test fixture (good, text). A ticket is escalated more often when the customer writes about an
outage that keeps coming back, asks for a refund or threatens to cancel, and when they already contacted
support several times; polite how-to questions are rarely escalated.
"""
import argparse
import csv
import os

import numpy as np

OPENERS = ["Hello,", "Hi team,", "Good morning,", "Dear support,", "Hey,"]
CALM = ["how do I change the wifi password on my router",
        "can you tell me which plan includes the streaming bundle",
        "I would like to move my installation appointment to next week",
        "where can I download last month's invoice",
        "please update the billing address on my account"]
ANGRY = ["the connection dropped again for the third time this week",
         "I want a refund for the days without internet",
         "if this outage happens again I will cancel my contract",
         "nobody called me back although you promised it twice",
         "the technician never showed up and I took a day off for it"]
CLOSERS = ["Thanks.", "Regards.", "Please fix this.", "Waiting for your answer.", "Cheers."]


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def ticket(rng):
    """(text, previous_contacts, channel, escalated)"""
    anger = rng.random()
    n_sentences = int(rng.integers(1, 4))
    body = []
    for _ in range(n_sentences):
        bank = ANGRY if rng.random() < anger else CALM
        body.append(bank[int(rng.integers(len(bank)))])
    text = " ".join([OPENERS[int(rng.integers(len(OPENERS)))], ". ".join(body) + ".",
                     CLOSERS[int(rng.integers(len(CLOSERS)))]])
    previous = int(rng.poisson(1 + 3 * anger))
    channel = ["email", "chat", "phone_callback"][int(rng.integers(3))]
    angry_sentences = sum(s in ANGRY for s in body)
    logit = -1.6 + 1.1 * angry_sentences + 0.25 * previous + rng.normal(0, 0.8)
    escalated = int(rng.random() < 1 / (1 + np.exp(-logit)))
    return text, previous, channel, escalated


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n-train", type=int, default=150)
    parser.add_argument("--n-test", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng([args.seed, 7])
    os.makedirs(os.path.join(args.out, "public"), exist_ok=True)
    os.makedirs(os.path.join(args.out, "private"), exist_ok=True)
    ids = rng.permutation(np.arange(10_000, 10_000 + 4 * (args.n_train + args.n_test)))
    train_rows, test_rows, answers = [], [], []
    for i in range(args.n_train + args.n_test):
        text, previous, channel, escalated = ticket(rng)
        tid = f"T{ids[i]}"
        if i < args.n_train:
            train_rows.append([tid, text, previous, channel, escalated])
        else:
            test_rows.append([tid, text, previous, channel])
            answers.append([tid, escalated])
    public, private = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    write_csv(os.path.join(public, "train.csv"), ["ticket_id", "message", "previous_contacts", "channel", "escalated"],
              train_rows)
    write_csv(os.path.join(public, "test.csv"), ["ticket_id", "message", "previous_contacts", "channel"], test_rows)
    write_csv(os.path.join(public, "sample_submission.csv"), ["ticket_id", "escalated"],
              [[r[0], 0.5] for r in test_rows])
    write_csv(os.path.join(private, "answers.csv"), ["ticket_id", "escalated"], answers)


if __name__ == "__main__":
    main()
