"""Policy implementations, one per module (scripted, hf, anthropic, openai), built from a spec string:

- ``scripted[:skill=0.7,seed=0]`` — the deterministic expert built from the reference-solution templates;
  ``strategy=KEY`` fixes its one strategy (never checked), ``candidates=KEY:KEY`` its plan (each candidate tried
  on the validation split, the better one by the score tool kept)
- ``hf:/path/or/hub-id[,adapter=/path,temperature=1.0,top_p=1.0,max_new_tokens=512,device=cpu,max_batch=16,
  wait_ms=5]`` (``max_batch``/``wait_ms``: how concurrent calls are batched, see :mod:`engine.inference.hf`);
  ``hf:tiny`` is the project's tiny model in the data dir (built on first use, sampling at its own defaults:
  :mod:`engine.agents.tiny`); ``adapter=`` takes a folder, or a training run's id or ``RUN_ID@STEP`` in the
  store the policy is loaded with
- ``anthropic:MODEL[,max_tokens=...]`` and ``openai:MODEL[,base_url=...]``

Each module imports its SDK or torch only when a policy of its kind is built.
"""

from __future__ import annotations

from typing import Any

from store import Store
from store.paths import data_dir

from ...models.adapters import resolve_adapter
from ..policy import Policy, PolicyError
from .. import tiny
from .anthropic import AnthropicPolicy
from .hf import HFPolicy
from .openai import OpenAIPolicy
from .scripted import ScriptedPolicy


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``"kind:target,key=value,..."`` → (kind, target, options). ``"scripted:skill=0.7"`` has no target."""
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    target, options = "", {}
    for i, part in enumerate(p for p in rest.split(",") if p.strip()):
        if "=" in part:
            key, _, value = part.partition("=")
            options[key.strip()] = value.strip()
        elif i == 0:
            target = part.strip()
        else:
            raise PolicyError(f"policy spec {spec!r}: expected key=value, got {part!r}")
    return kind, target, options


def _num(options: dict[str, Any], key: str, cast, spec: str) -> Any:
    if key not in options:
        return None
    try:
        return cast(options[key])
    except (TypeError, ValueError):
        raise PolicyError(f"policy spec {spec!r}: {key}={options[key]!r} is not a {cast.__name__}") from None


def load_policy(spec: str, *, store: Store | None = None, **kw: Any) -> Policy:
    """Build a policy from its spec string; keyword arguments override the spec's options. ``store`` is the store
    the caller holds: an ``adapter=`` run id is looked up in it, and ``hf:tiny`` lives in its data dir (without
    one: the data dir of the settings, and adapters by folder only)."""
    kind, target, options = parse_spec(spec)
    options = {**options, **{k: v for k, v in kw.items() if v is not None}}
    if kind == "scripted":
        unknown = set(options) - {"skill", "seed", "strategy", "candidates"}
        if unknown or target:
            raise PolicyError(f"policy spec {spec!r}: scripted takes skill=, seed=, strategy=, candidates= only")
        return ScriptedPolicy(skill=_num(options, "skill", float, spec) if "skill" in options else 1.0,
                              seed=_num(options, "seed", int, spec) or 0, strategy=options.get("strategy"),
                              candidates=options.get("candidates"))
    if kind == "hf":
        if not target:
            raise PolicyError(f"policy spec {spec!r}: give a model path or hub id, e.g. hf:/path/to/model")
        unknown = set(options) - {"adapter", "device", "temperature", "top_p", "max_new_tokens", "max_batch",
                                  "wait_ms"}
        if unknown:
            raise PolicyError(f"policy spec {spec!r}: unknown option(s) {sorted(unknown)}")
        model, temperature, max_new_tokens = target, 1.0, 512
        if target == tiny.NAME:
            home = store.data_dir if store is not None else data_dir()
            model, temperature, max_new_tokens = str(tiny.ensure(home)), tiny.TEMPERATURE, tiny.MAX_NEW_TOKENS
        adapter = options.get("adapter")
        policy = HFPolicy(
            model, adapter=resolve_adapter(adapter, store) if adapter else None, device=options.get("device"),
            temperature=_num(options, "temperature", float, spec) if "temperature" in options
            else temperature,
            top_p=_num(options, "top_p", float, spec) if "top_p" in options else 1.0,
            max_new_tokens=_num(options, "max_new_tokens", int, spec) or max_new_tokens,
            max_batch=_num(options, "max_batch", int, spec) or 16,
            wait_ms=_num(options, "wait_ms", float, spec) if "wait_ms" in options else 5.0,
        )
        policy.name = f"hf:{target}" + (f",adapter={adapter}" if adapter else "")  # as named, not as resolved
        return policy
    if kind == "anthropic":
        return AnthropicPolicy(model=target or None, max_tokens=_num(options, "max_tokens", int, spec),
                               base_url=options.get("base_url"),
                               temperature=_num(options, "temperature", float, spec))
    if kind == "openai":
        return OpenAIPolicy(model=target or None, base_url=options.get("base_url"),
                            max_tokens=_num(options, "max_tokens", int, spec),
                            temperature=_num(options, "temperature", float, spec))
    raise PolicyError(f"unknown policy {kind!r} in {spec!r}; expected scripted, hf, anthropic or openai")
