"""GRPO updates of the tiny model on a fixed batch, in however many processes accelerate launched this script
with: each takes its share of the batch (tests/test_distributed.py and tests/test_rl_ddp.py compare the adapters
of 1 and 2 processes).

    python -m accelerate.commands.launch --multi_gpu --num_processes 2 tests/ddp_update.py MODEL_DIR OUT.pt [uneven]

``uneven``: several steps with kl_coef 0 where the processes keep different numbers of sequences (2 micro-batches
against 1), through every masking cause of the trainer (:data:`UNEVEN`).
"""

from __future__ import annotations

import sys

import torch

#: (assistant answer, observation, advantage, weight): uneven shares over 2 processes, one skipped trajectory
BATCH = [("model = LogisticRegression()\n", "accuracy 0.81\n", 1.2, 1.0),
         ("test = pd.read_csv('train.csv')\n", "KeyError: 'target'\n", -0.9, 1.0),
         ("model = HistGradientBoostingClassifier()\n", "accuracy 0.86\n", 1.5, 1.0),
         ("print(train.head())\n", "   id  x  target\n", -0.4, 0.0),
         ("model = RandomForestClassifier(n_estimators=50)\n", "accuracy 0.79\n", -0.2, 1.0)]
#: what the update does: micro-batches of 2 (a process gets 1 or 2), two optimizer passes, a KL term, no clipping
#: (plain SGD with no clipping: any error in the scale of the summed gradients shows in the weights)
SETTINGS = dict(micro_batch=2, mu=2, kl_coef=0.05, max_grad_norm=1e6)


def sequences(tok):
    from engine.rl.objective import build_sequence
    from store.trajectories import Turn

    def turn(role: str, text: str) -> Turn:
        return Turn(role=role, text=text, token_ids=tok(text, add_special_tokens=False)["input_ids"])

    return [build_sequence([turn("system", "system: solve the task\n"), turn("user", "train.csv test.csv\n"),
                            turn("assistant", answer), turn("tool", obs)]) for answer, obs, _, _ in BATCH]


def update(model_dir: str, processes) -> dict[str, torch.Tensor]:
    """The adapter after one update on this process's share of the batch; the same initial adapter everywhere."""
    from engine.rl.distributed import TokenLogProbs
    from engine.rl.modeling import load_for_training
    from engine.rl.update import grpo_update

    torch.manual_seed(0)
    model, tok, _ = load_for_training(model_dir, lora_r=4, lora_alpha=8, device="cpu")
    with torch.no_grad():  # LoRA B starts at 0: move it so the KL term and the ratios are not trivial
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p) * 0.02)
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    sgd = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    scorer, opt = processes.prepare(TokenLogProbs(model, temperature=0.7), sgd)
    seqs = sequences(tok)
    mine = processes.share(len(seqs))
    stats = grpo_update(scorer, opt, [seqs[i] for i in mine], [BATCH[i][2] for i in mine],
                        [BATCH[i][3] for i in mine], pad_id=tok.pad_token_id or 0, processes=processes, **SETTINGS)
    weights = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    return {"before": before, "weights": weights, "loss": stats.loss, "trained": stats.trained_trajectories,
            "kl": stats.kl, "grad_norm": stats.grad_norm}


#: (group, reward, what happens to it, the process that runs it): rank 0 keeps 4 sequences (2 micro-batches of 2),
#: rank 1 keeps 1 (1 micro-batch); every cause the trainer masks a trajectory for is here, plus one whose reply has no
#: model tokens (filtered out) and one trained on as two sequences (an aide trajectory: one per reply context)
UNEVEN = [("a", 0.9, "kept", 0), ("a", 0.1, "kept", 0), ("a", 0.0, "timed out", 0), ("a", 0.7, "kept", 1),
          ("b", 0.8, "two sequences", 0), ("b", 0.3, "overlong", 0), ("b", 0.6, "stale", 1), ("b", 0.2, "error", 1),
          ("b", 0.0, "no model tokens", 1)]
#: what the uneven updates do: kl_coef 0 (the default, where the processes deadlocked), several steps
UNEVEN_SETTINGS = dict(micro_batch=2, mu=1, kl_coef=0.0, max_grad_norm=1e6)
UNEVEN_STEPS = 3
MAX_SEQ_LEN = 100


def uneven_batch(tok):
    """Every trajectory of :data:`UNEVEN` as the trainer sees it: its rollout (the flags the trainer masks by, set
    as the trainer sets them), its sequences, its advantage and weight from the whole batch's group statistics."""
    from engine.rl.objective import build_sequence, group_advantages
    from engine.rl.rollouts import Rollout, fresh
    from store.trajectories import Turn

    def turn(role: str, text: str, version: int | None = None) -> Turn:
        return Turn(role=role, text=text, token_ids=tok(text, add_special_tokens=False)["input_ids"],
                    policy_version=version)

    head = [turn("system", "system: solve the task\n"), turn("user", "train.csv test.csv\n")]
    rows = []
    for n, (group, reward, what, rank) in enumerate(UNEVEN):
        answer = {"overlong": "model = RandomForestClassifier(n_estimators=50, max_depth=8, min_samples_leaf=3, "
                              "random_state=0)\n" * 3,
                  "no model tokens": ""}.get(what, f"model = LogisticRegression(C={n + 1})\n")
        turns = [*head, turn("assistant", answer, 3 if what == "stale" else 0), turn("tool", "accuracy 0.81\n")]
        seqs = [build_sequence(turns)]
        if what == "two sequences":
            seqs.append(build_sequence([*head, turn("assistant", "model = HistGradientBoostingClassifier()\n", 0)]))
        r = Rollout(id=f"r{n}", env_id="e", group_id=group, rng_seed=n, reward=reward, timed_out=what == "timed out",
                    turns=turns, errored=what == "error")
        r.overlong = any(len(s.input_ids) > MAX_SEQ_LEN for s in seqs)
        r.stale = not fresh(r, 0, 0)
        rows.append((r, seqs, rank))
    stats = group_advantages([r.reward for r, _, _ in rows], [r.group_id for r, _, _ in rows],
                             masked=[r.masked for r, _, _ in rows])
    return [(r, seqs, rank, a, w) for (r, seqs, rank), a, w in zip(rows, stats.advantages, stats.weights)]


def uneven(model_dir: str, processes, ranks: tuple[int, ...] | None = None) -> dict:
    """The adapter after :data:`UNEVEN_STEPS` updates on the trajectories of ``ranks`` (default: this process's)."""
    from engine.rl.distributed import TokenLogProbs
    from engine.rl.modeling import load_for_training
    from engine.rl.update import grpo_update

    torch.manual_seed(0)
    model, tok, _ = load_for_training(model_dir, lora_r=4, lora_alpha=8, device="cpu")
    sgd = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    scorer, opt = processes.prepare(TokenLogProbs(model, temperature=0.7), sgd)
    ranks = ranks if ranks is not None else (processes.rank,)
    seqs, adv, weights, owners = [], [], [], []
    for r, got, rank, a, w in uneven_batch(tok):
        if rank in ranks:
            seqs.extend(got)
            adv.extend([a] * len(got))
            weights.extend([w] * len(got))
            owners.extend([r.id] * len(got))
    keep = [i for i, w in enumerate(weights) if w > 0 and seqs[i].model_tokens > 0]
    steps = [grpo_update(scorer, opt, seqs, adv, weights, pad_id=tok.pad_token_id or 0, processes=processes,
                         owners=owners, **UNEVEN_SETTINGS) for _ in range(UNEVEN_STEPS)]
    return {"weights": {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad},
            "kept": len(keep), "trained": [s.trained_trajectories for s in steps], "loss": [s.loss for s in steps],
            "grad_norm": [s.grad_norm for s in steps]}


if __name__ == "__main__":
    from engine.rl.distributed import Processes

    procs = Processes.from_env(device="cpu")
    if sys.argv[3:] == ["uneven"]:
        result = uneven(sys.argv[1], procs)
        result["kept_by_rank"] = procs.gather([result["kept"]])
    else:
        result = update(sys.argv[1], procs)
    if procs.is_main:
        torch.save({**result, "world_size": procs.world_size}, sys.argv[2])
