"""One client per LLM provider, shared by synthesis and the agent policies: ``anthropic`` (the official SDK,
Messages API, prompt caching) and ``openai`` (any OpenAI-compatible chat endpoint such as a local vLLM). Both
return a :class:`ChatReply` whose :class:`Usage` carries tokens, retries and cost; a :class:`CostMeter` adds up
what a run spent and says when a budget is gone."""

from . import clients
from .base import ChatReply, ChatTurn, CostMeter, LLMError, Usage, cost_usd

__all__ = ["ChatReply", "ChatTurn", "CostMeter", "LLMError", "Usage", "clients", "cost_usd"]
