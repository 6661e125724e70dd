"""One client per LLM provider, shared by synthesis and the agent policies: ``anthropic`` (the official SDK,
Messages API, prompt caching) and ``openai`` (any OpenAI-compatible chat endpoint such as a local vLLM). Both
return a :class:`ChatReply` whose :class:`Usage` carries tokens, retries and cost (a synthesis run adds up what its
attempts recorded: ``store.envs.run_cost``)."""

from . import clients
from .base import ChatReply, ChatTurn, LLMError, Usage, cost_usd

__all__ = ["ChatReply", "ChatTurn", "LLMError", "Usage", "clients", "cost_usd"]
