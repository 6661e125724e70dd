"""Models: tiny local causal LMs for tests and CPU runs, the loader (with PEFT adapters), the device pick."""

from .tiny import build_tiny_model, load_causal_lm, pick_device

__all__ = ["build_tiny_model", "load_causal_lm", "pick_device"]
