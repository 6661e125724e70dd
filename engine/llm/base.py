"""What every provider client returns: the reply text and its :class:`Usage` (tokens, cache, retries, cost)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal, TypedDict

from ..errors import InfrastructureError, SandmleError


class LLMError(SandmleError):
    """A provider client cannot be built (no key, no package)."""


def sdk_call(create: Callable[..., Any], kwargs: dict[str, Any], errors: tuple[type[Any], type[Any]], *, api: str,
             where: str) -> Any:
    """``create(**kwargs)`` of a provider SDK (a raw response). What its retries did not cure — a status error
    (``errors[0]``) or no connection (``errors[1]``) — becomes a one-line :class:`InfrastructureError` naming the
    ``api`` and ``where`` it lives: the work could not be done, which is no verdict on it."""
    status_error, connection_error = errors
    try:
        return create(**kwargs)
    except status_error as exc:
        raise InfrastructureError(f"{api} error {exc.status_code}: {exc.message}") from None
    except connection_error as exc:
        raise InfrastructureError(f"cannot reach {where}: {exc}") from None


class ChatTurn(TypedDict):
    role: Literal["user", "assistant"]
    content: str


@dataclass
class Usage:
    provider: str
    model: str
    input_tokens: int = 0  #: prompt tokens billed at the full rate
    output_tokens: int = 0
    cache_write_tokens: int = 0  #: prompt tokens written to the provider's prompt cache
    cache_read_tokens: int = 0  #: prompt tokens read from it (billed at a tenth)
    cost_usd: float = 0.0
    retries: int = 0  #: retries the SDK took (429 / 5xx with backoff)
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ChatReply:
    text: str
    usage: Usage


#: USD per million tokens (input, output); cache writes cost 1.25x input, cache reads 0.1x input
ANTHROPIC_PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4": (15.0, 75.0), "claude-sonnet-4": (3.0, 15.0), "claude-haiku-4": (1.0, 5.0),
    "claude-3-5-haiku": (0.8, 4.0), "claude-3-7-sonnet": (3.0, 15.0),
}
DEFAULT_ANTHROPIC_PRICE = (3.0, 15.0)
CACHE_WRITE_FACTOR, CACHE_READ_FACTOR = 1.25, 0.1


def anthropic_price(model: str) -> tuple[float, float]:
    """The price of the longest known model-name prefix (``claude-sonnet-4-5`` → ``claude-sonnet-4``)."""
    known = [k for k in ANTHROPIC_PRICES if model.startswith(k)]
    return ANTHROPIC_PRICES[max(known, key=len)] if known else DEFAULT_ANTHROPIC_PRICE


def cost_usd(price: tuple[float, float], *, input_tokens: int, output_tokens: int, cache_write_tokens: int = 0,
             cache_read_tokens: int = 0) -> float:
    per_in, per_out = price[0] / 1e6, price[1] / 1e6
    return round(input_tokens * per_in + cache_write_tokens * per_in * CACHE_WRITE_FACTOR
                 + cache_read_tokens * per_in * CACHE_READ_FACTOR + output_tokens * per_out, 8)
