"""What tests/test_sandbox_unprivileged.py runs as the test user: ``register`` (the tiny environment into the
user's store) and ``workers`` (each GRPO rollout worker's sandbox runs one step; prints [isolation, stdout] per
worker as JSON)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _store():
    from store import Store

    return Store(Path(os.environ["SANDMLE_HOME"]) / "sandmle.db")


def warm_step(worker, _item):
    """An executor work function: one Python step in the worker's own sandbox backend, warm."""
    with worker.sandbox.open() as ws:
        r = ws.run_python("import sys\nprint('pandas' in sys.modules)", warm=True)
    return r.isolation, r.stdout_tail


def main() -> None:
    from rl_tiny import register_tiny_env

    store = _store()
    if sys.argv[1] == "register":
        print(register_tiny_env(store))
        return
    from engine.rl.config import GRPOConfig
    from engine.rl.grpo import GRPOTrainer

    trainer = GRPOTrainer(store, GRPOConfig(env_ids=["tiny-tabular"], rollout_workers=2))
    try:
        print(json.dumps(trainer.executor.map(warm_step, [None, None])))
    finally:
        trainer.close()


if __name__ == "__main__":
    main()
