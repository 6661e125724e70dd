"""One GRPO update of the tiny model on a fixed batch, in however many processes accelerate launched this script
with: each takes its share of the batch (tests/test_distributed.py compares the adapters of 1 and 2 processes).

    python -m accelerate.commands.launch --multi_gpu --num_processes 2 tests/ddp_update.py MODEL_DIR OUT.pt
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


if __name__ == "__main__":
    from engine.rl.distributed import Processes

    procs = Processes.from_env(device="cpu")
    result = update(sys.argv[1], procs)
    if procs.is_main:
        torch.save({**result, "world_size": procs.world_size}, sys.argv[2])
