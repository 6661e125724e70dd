"""Agents: the shared environment interface, scaffolds (react / aide / oneshot), policies and rollouts."""

from .policy import Action, Message, Policy, load_policy

__all__ = ["Action", "Message", "Policy", "load_policy"]
