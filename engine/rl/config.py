"""One config dataclass per algorithm (as TRL does): every field carries help text, ``__post_init__`` rejects
bad values with a ``ValueError`` naming the field, and :func:`load_config` merges a ``--config FILE.toml`` with
command-line flags (unknown keys are rejected with the key and the file). For keys neither sets, the model's own
defaults come first (``tiny``'s recipe: :mod:`engine.agents.tiny.recipe`), then the dataclass defaults. Where code
runs and who runs it are not here: they are the settings' ``[sandbox]`` and ``[executor]`` (a run stores the ones it
ran under)."""

from __future__ import annotations

import tomllib
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from ..agents.scaffolds import SCAFFOLDS
from ..errors import ConfigError
from ..agents.tiny.recipe import defaults as model_defaults


def _option(default: Any, help: str, **kw: Any) -> Any:
    if default in (list, dict) or (callable(default) and not isinstance(default, type)):
        return field(default_factory=default, metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


@dataclass
class _Common:
    model: str = _option("tiny", "base model: a local folder or hub id; 'tiny' = the project's locally built tiny "
                         "model, which brings its own defaults (shown as 'tiny:')")
    adapter: str | None = _option(None, "start from this PEFT adapter: a folder, a run id (its final adapter) or "
                                  "RUN_ID@STEP (e.g. the SFT run)")
    lr: float = _option(1e-4, "learning rate (AdamW)")
    weight_decay: float = _option(0.0, "AdamW weight decay")
    max_grad_norm: float = _option(1.0, "gradient clipping norm")
    lora_r: int = _option(16, "LoRA rank")
    lora_alpha: int = _option(32, "LoRA alpha")
    lora_dropout: float = _option(0.0, "LoRA dropout")
    lora_modules_to_save: list[str] = _option(list, "modules trained in full beside the adapter and saved with it (PEFT "
                                         "modules_to_save), e.g. 'norm' for a random-init tiny model")
    seed: int = _option(0, "RNG seed (torch, python, numpy, sampling)")
    device: str | None = _option(None, "cuda | cpu; default: cuda when available (bf16 where supported), else cpu")
    name: str | None = _option(None, "a name for the run")
    processes: int = _option(1, "data-parallel training processes on this machine (accelerate: DDP, gloo on CPU); "
                                "each takes a share of the batch, gradients are averaged")
    fsdp: bool = _option(False, "shard the model over the processes (FSDP) instead of copying it (DDP): for models "
                                "too big for one device")

    def _check_common(self) -> None:
        if self.processes < 1:
            raise ValueError(f"processes must be >= 1 (got {self.processes})")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0 (got {self.lr})")
        if self.lora_r < 1:
            raise ValueError(f"lora_r must be >= 1 (got {self.lora_r})")
        if self.max_grad_norm <= 0:
            raise ValueError(f"max_grad_norm must be > 0 (got {self.max_grad_norm})")
        if not 0 <= self.lora_dropout < 1:
            raise ValueError(f"lora_dropout must be in [0, 1) (got {self.lora_dropout})")
        if self.device not in (None, "cpu", "cuda") and not str(self.device).startswith("cuda:"):
            raise ValueError(f"device must be cpu or cuda (got {self.device!r})")


@dataclass
class GRPOConfig(_Common):
    """Trajectory-wise GRPO over whole multi-turn episodes."""

    steps: int = _option(20, "optimizer steps (one batch of groups each)")
    envs_per_step: int = _option(4, "environments per step (the batch); each gets a group of `group_size` rollouts")
    group_size: int = _option(4, "rollouts per environment (G); advantages are normalized within the group")
    env_split: str = _option("train", "which environments to train on (store split: train | heldout | all = every "
                                 "split but the real competitions)")
    env_ids: list[str] = _option(list, "explicit environment ids (overrides env_split)")
    scaffold: str = _option("react", "scaffold the policy acts in during training")
    reward: str = _option("milestone", "reward scheme: milestone | sparse")
    max_turns: int = _option(15, "most model calls per episode")
    max_new_tokens: int = _option(256, "most generated tokens per turn")
    temperature: float = _option(1.0, "sampling temperature")
    top_p: float = _option(1.0, "nucleus sampling; the trainer's log-probs apply the same temperature and nucleus, so "
                                "the importance weights compare like with like")
    step_timeout_s: float | None = _option(None, "time limit of one code execution (default: [sandbox] timeout_s)")
    episode_timeout_s: float = _option(1200.0, "time limit of one episode")
    clip_low: float = _option(0.2, "lower clip of the ratio: 1 - clip_low")
    clip_high: float = _option(0.28, "upper clip of the ratio (clip-higher): 1 + clip_high")
    kl_coef: float = _option(0.0, "KL penalty to the policy GRPO starts from (--adapter's, else the base model); "
                                  "0 = off (default; the KL is still measured)")
    scale_rewards: bool = _option(True, "divide advantages by the group's reward std (Dr. GRPO: False)")
    equal_group: str = _option("skip", "groups whose rewards are all equal carry no signal (advantage 0): skip = "
                               "leave them out; downweight = keep their tokens at weight equal_group_weight, which "
                               "adds no policy gradient and only enlarges the token mean (a smaller step for the "
                               "other groups; with kl_coef > 0 their KL term is trained)")
    equal_group_weight: float = _option(0.1, "weight of an all-equal group's tokens when equal_group = downweight")
    mu: int = _option(1, "optimizer passes over each batch (ratio is 1 on the first pass)")
    micro_batch: int = _option(4, "trajectories per forward pass (gradient accumulation over the batch)")
    max_seq_len: int = _option(4096, "a longer trajectory is masked (counted as 'overlong', like a timeout), never cut")
    logprob_chunk: int = _option(1024, "positions per chunk of the LM head + log-softmax in the update (bounds memory)")
    gradient_checkpointing: bool = _option(False, "recompute the backbone's activations in the backward pass (memory)")
    sampler: str = _option("hf", "who samples rollouts: hf (batched, in process) | vllm (a vllm serve process: "
                      "--sampler-url or started for you) | vllm-colocated (in-process vLLM on the training GPU)")
    sampler_url: str | None = _option(None, "URL of a running `vllm serve MODEL --enable-lora` (with --sampler vllm)")
    sampler_batch: int = _option(16, "most requests the hf / colocated sampler puts in one batch")
    sampler_prefix_cache: int = _option(32768, "tokens of KV the hf sampler keeps so an episode's next turn prefills "
                                   "only its new messages (0 = re-encode every turn)")
    tis_cap: float = _option(2.0, "truncated importance sampling: weight each token by min(π_trainer/π_sampler, cap); "
                        "0 = off (the mismatch is logged either way)")
    curriculum: bool = _option(True, "sample environments by the reward variance of their recent groups")
    curriculum_window: int = _option(3, "recent groups per environment the curriculum looks at")
    curriculum_floor: float = _option(0.05, "least sampling weight of any environment (exploration)")
    save_every: int = _option(5, "save a checkpoint (adapter + optimizer + RNG + curriculum) every K steps")
    max_staleness: int = _option(0, "policy updates a rollout's sampling weights may lag behind the trained ones: "
                                    "0 = on-policy; 1 = the next step's rollouts sample while this step's update runs")
    rollout_workers: int = _option(8, "rollouts in flight at once (the workers of the [executor] that runs them): "
                              "their model calls share the sampler's batches and the sandbox runs one episode's code "
                              "while the model generates for others")

    def __post_init__(self) -> None:
        self._check_common()
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1 (got {self.steps})")
        if self.group_size < 2:
            raise ValueError(f"group_size must be >= 2: a group of one has no baseline (got {self.group_size})")
        if self.envs_per_step < 1:
            raise ValueError(f"envs_per_step must be >= 1 (got {self.envs_per_step})")
        if not 0 < self.clip_low < 1:
            raise ValueError(f"clip_low must be in (0, 1) (got {self.clip_low})")
        if self.clip_high <= 0:
            raise ValueError(f"clip_high must be > 0 (got {self.clip_high})")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be >= 0 (got {self.kl_coef})")
        if self.equal_group not in ("skip", "downweight"):
            raise ValueError(f"equal_group must be skip or downweight (got {self.equal_group!r})")
        if not 0 <= self.equal_group_weight <= 1:
            raise ValueError(f"equal_group_weight must be in [0, 1] (got {self.equal_group_weight})")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0 (got {self.temperature})")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (got {self.top_p})")
        for name in ("max_turns", "max_new_tokens", "mu", "micro_batch", "save_every", "rollout_workers",
                     "curriculum_window", "max_seq_len", "logprob_chunk", "sampler_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1 (got {getattr(self, name)})")
        if self.env_split not in ("train", "heldout", "all"):
            raise ValueError(f"env_split must be train, heldout or all (got {self.env_split!r})")
        if self.scaffold not in SCAFFOLDS:
            raise ValueError(f"scaffold must be one of {', '.join(SCAFFOLDS)} (got {self.scaffold!r})")
        if self.reward not in ("milestone", "sparse"):
            raise ValueError(f"reward must be milestone or sparse (got {self.reward!r})")
        if self.sampler not in ("hf", "vllm", "vllm-colocated"):
            raise ValueError(f"sampler must be hf, vllm or vllm-colocated (got {self.sampler!r})")
        if self.sampler_url and self.sampler != "vllm":
            raise ValueError("sampler_url needs sampler = vllm")
        if self.sampler != "hf" and self.lora_modules_to_save:
            raise ValueError("vLLM serves LoRA weights only: lora_modules_to_save needs sampler = hf")
        if self.sampler_prefix_cache < 0:
            raise ValueError(f"sampler_prefix_cache must be >= 0 (got {self.sampler_prefix_cache})")
        if self.tis_cap < 0:
            raise ValueError(f"tis_cap must be >= 0 (got {self.tis_cap})")
        if self.step_timeout_s is not None and self.step_timeout_s <= 0:
            raise ValueError(f"step_timeout_s must be > 0 (got {self.step_timeout_s})")
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0 (got {self.max_staleness})")
        if self.fsdp:
            raise ValueError("fsdp is for sft: GRPO's update keeps a whole copy of the model on each process (DDP)")


@dataclass
class SFTConfig(_Common):
    """Supervised fine-tuning (TRL SFTTrainer) on stored trajectories filtered by reward."""

    lr: float = _option(5e-4, "learning rate")
    epochs: float = _option(3.0, "passes over the filtered trajectories")
    batch_size: int = _option(4, "trajectories per forward pass of each process")
    grad_accum: int = _option(1, "gradient accumulation: forward passes per optimizer step (an optimizer step sees "
                                 "batch_size × grad_accum × processes trajectories)")
    min_reward: float = _option(0.5, "keep trajectories with reward >= this")
    source_run: str | None = _option(None, "only trajectories of this run (e.g. a scripted rollout run)")
    source_policy: str | None = _option(None, "only trajectories of this policy, or of policies that add options to "
                                        "it ('scripted' takes every scripted one, 'scripted:skill=1' also "
                                        "'scripted:skill=1,strategy=...')")
    scaffold: str | None = _option(None, "only trajectories played in this scaffold (e.g. react); default: every "
                                   "scaffold")
    env_split: str = _option("train", "only trajectories on environments of this split (train | heldout | all = every "
                                 "split but the real competitions)")
    max_seq_len: int = _option(4096, "longer samples are truncated")
    max_samples: int | None = _option(None, "cap the number of training trajectories")
    save_every: int = _option(50, "save a checkpoint every K optimizer steps")
    full_finetune: bool = _option(False, "train every weight instead of a LoRA adapter: the run ends with a model "
                                  "folder (weights, tokenizer), e.g. a first stage that makes a base for later "
                                  "adapters; the lora_* settings are then unused")
    zero_unseen_tokens: bool = _option(False, "with full_finetune: zero the embedding of every token no training "
                                       "example contains (a random-init model's untrained rows are noise that a "
                                       "prompt full of unseen names feeds into every layer)")

    def __post_init__(self) -> None:
        self._check_common()
        if self.epochs <= 0:
            raise ValueError(f"epochs must be > 0 (got {self.epochs})")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {self.batch_size})")
        if self.grad_accum < 1:
            raise ValueError(f"grad_accum must be >= 1 (got {self.grad_accum})")
        if self.max_seq_len < 8:
            raise ValueError(f"max_seq_len must be >= 8 (got {self.max_seq_len})")
        if self.env_split not in ("train", "heldout", "all"):
            raise ValueError(f"env_split must be train, heldout or all (got {self.env_split!r})")
        if self.save_every < 1:
            raise ValueError(f"save_every must be >= 1 (got {self.save_every})")
        if self.scaffold is not None and self.scaffold not in SCAFFOLDS:
            raise ValueError(f"scaffold must be one of {', '.join(SCAFFOLDS)} (got {self.scaffold!r})")
        if self.full_finetune and self.adapter:
            raise ValueError("full_finetune trains the model itself: start it from a model, not an adapter")
        if self.zero_unseen_tokens and not self.full_finetune:
            raise ValueError("zero_unseen_tokens changes the model's own embeddings: it needs full_finetune")


C = TypeVar("C", GRPOConfig, SFTConfig)


def load_config(cls: type[C], path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> C:
    """Build a config from a TOML file (top level or a ``[grpo]``/``[sft]`` table) plus overrides (flags set
    by the user; ``None`` values are ignored), then the model's own defaults (:mod:`engine.agents.tiny.recipe`)
    for keys neither sets. Errors become :class:`ConfigError` naming the key and file."""
    data: dict[str, Any] = {}
    where = "flags"
    if path is not None:
        where = str(path)
        try:
            raw = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such config file") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
        section = "grpo" if cls is GRPOConfig else "sft"
        data = dict(raw.get(section, raw)) if section in raw else dict(raw)
    known = {f.name for f in fields(cls)}
    for key in data:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} for {cls.__name__} (known: {', '.join(sorted(known))})")
    for key, value in (overrides or {}).items():
        if value is None or (isinstance(value, (tuple, list)) and not value and key in data):
            continue
        if key not in known:
            raise ConfigError(f"unknown option {key!r} for {cls.__name__}")
        data[key] = list(value) if isinstance(value, tuple) else value
    kind = "grpo" if cls is GRPOConfig else "sft"
    model = data.get("model", next(f.default for f in fields(cls) if f.name == "model"))
    for key, value in model_defaults(kind, model, data.get("sampler")).items():
        data.setdefault(key, value)
    try:
        return cls(**data)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


def config_from_dict(cls: type[C], data: dict[str, Any]) -> C:
    """Rebuild a stored config (``runs.config``), ignoring keys a newer/older version does not know."""
    known = {f.name for f in fields(cls) if f.default is not MISSING or f.default_factory is not MISSING}
    return cls(**{k: v for k, v in data.items() if k in known})


def to_dict(cfg: Any) -> dict[str, Any]:
    return asdict(cfg)
