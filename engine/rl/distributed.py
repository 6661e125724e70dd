"""Data-parallel training with accelerate: this process's place among the processes of one training run.

``sandmle train sft|grpo --processes N`` relaunches the command under ``accelerate launch`` (DDP; gloo on CPU,
NCCL on GPUs); the same command started by ``accelerate launch --multi_gpu --num_processes N -m workbench train …``
runs unchanged. Each process reads its rank from the environment accelerate sets (RANK, WORLD_SIZE, MASTER_ADDR).
A run of one process gets :data:`ONE`, where every operation is the identity and nothing of accelerate is loaded.

What the GRPO update needs: :meth:`Processes.prepare` wraps the policy's token log-probs (:class:`TokenLogProbs`,
the exact forward the loss goes through) in DDP (SFT's FSDP is TRL's); :meth:`total` / :meth:`gather` /
:meth:`broadcast` move the few numbers and records a step shares (token counts, rewards of whole groups, the run
id); :meth:`share` says which items of a list are this process's."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from contextlib import nullcontext
from typing import Any, ContextManager, Sequence

import torch

from ..errors import TrainingError
from .objective import sequence_logprobs

#: set by a parent that relaunched itself under accelerate, so the children never relaunch again
LAUNCHED_VARIABLE = "SANDMLE_LAUNCHED"


class TokenLogProbs(torch.nn.Module):
    """The policy as the update sees it: log p(token t+1 | tokens ≤ t) of right-padded sequences under the
    distribution the sampler draws from (``temperature``, ``top_p``; chunked LM head, see
    :func:`~.objective.sequence_logprobs`). A module of its own so that DDP wraps exactly this forward.

    It also keeps the policy GRPO starts from, the KL term's reference: ``start`` (default: the model's trainable
    weights as they are now) is a frozen copy of the trainable weights — the starting adapter (an SFT run's, when
    GRPO starts from one) and any modules trained in full. :meth:`reference` swaps them into the live model for one
    no-grad pass: the copy costs the adapter's size, never a second model. (The adapter disabled would be the base
    model before SFT — for ``tiny``, a random-init network.)"""

    def __init__(self, model: Any, temperature: float = 1.0, chunk: int = 1024, top_p: float = 1.0,
                 start: dict[str, torch.Tensor] | None = None):
        super().__init__()
        self.model, self.temperature, self.chunk, self.top_p = model, temperature, chunk, top_p
        #: a plain dict, not buffers: DDP neither sees nor broadcasts it
        self.start = start if start is not None else trainable_weights(model)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return sequence_logprobs(self.model, input_ids, attention_mask, self.temperature, self.chunk, self.top_p)

    @torch.no_grad()
    def reference(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """The starting policy's log-probs (eval mode: no dropout), the trained weights put back afterwards. Call it
        on the unwrapped module, never through DDP (a no-grad pass must issue no collective), and before the
        micro-batch's own forward (the swap writes the parameters in place)."""
        params = dict(self.model.named_parameters())
        now = {name: params[name].detach().clone() for name in self.start}
        training = self.model.training
        try:
            for name, value in self.start.items():
                params[name].copy_(value)
            self.model.eval()
            return self.forward(input_ids, attention_mask)
        finally:
            for name, value in now.items():
                params[name].copy_(value)
            self.model.train(training)


def trainable_weights(model: Any) -> dict[str, torch.Tensor]:
    """A detached copy of every trainable parameter of ``model`` (the adapter and the modules trained in full)."""
    return {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def world_size_from_env() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


class Processes:
    """One process of a data-parallel run (``state`` given: accelerate's view of the launch) or the only one
    (:data:`ONE`). The Accelerator that wraps the model is made by :meth:`prepare` (GRPO); SFT leaves that to
    TRL's trainer and uses this only to agree on the run."""

    def __init__(self, state: Any = None):
        self.state = state
        self.accelerator: Any = None
        self.rank = state.process_index if state is not None else 0
        self.world_size = state.num_processes if state is not None else 1

    @classmethod
    def from_env(cls, *, fsdp: bool = False, device: str | None = None) -> "Processes":
        """The processes accelerate launched this one among; :data:`ONE` outside a launch."""
        if world_size_from_env() <= 1:
            if fsdp:
                raise TrainingError("--fsdp shards the model over several processes", hint="add --processes N")
            return ONE
        from accelerate import PartialState  # heavy optional dependency

        return cls(PartialState(cpu=device == "cpu" or not torch.cuda.is_available()))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> str | None:
        """This process's device (``cuda:LOCAL_RANK`` or cpu); None: the config decides (one process)."""
        if self.state is None:
            return None
        return "cpu" if self.state.device.type == "cpu" else str(self.state.device)

    # ------------------------------------------------------------------ the model
    def prepare(self, scorer: TokenLogProbs, optimizer: torch.optim.Optimizer) -> tuple[Any, Any]:
        """(scorer wrapped in DDP, optimizer) — unchanged for one process."""
        if self.state is None:
            return scorer, optimizer
        from accelerate import Accelerator  # heavy optional dependency

        from accelerate.utils import DistributedDataParallelKwargs  # heavy optional dependency

        # no buffer broadcast at the start of a forward: the buffers (rotary frequencies) are equal everywhere,
        # and that broadcast made the order of collectives depend on each process's number of micro-batches
        # (processes with different numbers of kept trajectories deadlocked)
        ddp = DistributedDataParallelKwargs(broadcast_buffers=False)
        self.accelerator = Accelerator(cpu=self.device == "cpu", kwargs_handlers=[ddp])
        with warnings.catch_warnings():  # torch >= 2.12 names it forward_sync_buffers, which accelerate cannot pass
            warnings.filterwarnings("ignore", message="`broadcast_buffers` is deprecated", category=FutureWarning)
            return self.accelerator.prepare(scorer, optimizer)

    def unwrap(self, scorer: Any) -> TokenLogProbs:
        return self.accelerator.unwrap_model(scorer) if self.accelerator is not None else scorer

    def no_sync(self, scorer: Any) -> ContextManager:
        """Accumulate gradients locally (every micro-batch but the last of an optimizer step)."""
        return self.accelerator.no_sync(scorer) if self.accelerator is not None else nullcontext()

    def backward(self, loss: torch.Tensor) -> None:
        if self.accelerator is not None:
            self.accelerator.backward(loss)
        else:
            loss.backward()

    def clip_grad_norm(self, params: Sequence[torch.nn.Parameter], max_norm: float) -> float:
        if self.accelerator is not None:
            return float(self.accelerator.clip_grad_norm_(params, max_norm))
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))

    # ------------------------------------------------------------------ sharing numbers and records
    def total(self, value: float) -> float:
        """The sum of ``value`` over every process."""
        if self.state is None:
            return float(value)
        from accelerate.utils import reduce  # heavy optional dependency

        t = torch.tensor([float(value)], dtype=torch.float64, device=self.state.device)
        return float(reduce(t, reduction="sum").item())

    def gather(self, items: list[Any]) -> list[Any]:
        """Every process's ``items``, concatenated in rank order (the same list on every process)."""
        if self.state is None:
            return list(items)
        from accelerate.utils import gather_object  # heavy optional dependency

        return gather_object(list(items))

    def broadcast(self, value: Any) -> Any:
        """The main process's ``value``, on every process."""
        if self.state is None:
            return value
        from accelerate.utils import broadcast_object_list  # heavy optional dependency

        box = [value]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def share(self, n: int) -> list[int]:
        """Which of ``n`` items this process takes: every ``world_size``-th, from its rank."""
        return list(range(self.rank, n, self.world_size))

    def wait(self) -> None:
        """Every process reaches this line before any goes on."""
        if self.state is not None:
            self.state.wait_for_everyone()


#: a run of one process
ONE = Processes()


def launch_command(processes: int, argv: Sequence[str]) -> list[str]:
    """``accelerate launch`` of ``sandmle ARGV`` in ``processes`` processes on this machine (DDP, or FSDP where the
    command says ``--fsdp``; gloo where there is no GPU)."""
    return [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "workbench", *argv]


def relaunch(processes: int, argv: Sequence[str]) -> int:
    """Run ``sandmle ARGV`` in ``processes`` processes under ``accelerate launch`` and wait; its exit code."""
    cmd = launch_command(processes, argv)
    env = {**os.environ, LAUNCHED_VARIABLE: "1"}
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:  # the launcher got the same Ctrl-C (one process group) and stops its processes
        return proc.wait()
