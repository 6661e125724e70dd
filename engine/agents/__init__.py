"""Agents: the shared environment interface, scaffolds (react / aide / oneshot), policies and rollouts."""

from .policy import Action, Policy

__all__ = ["Action", "Policy"]
