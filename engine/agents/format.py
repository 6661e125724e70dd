"""The react turn format: ``<think>…</think>`` then exactly one ``<tool_call>{json}</tool_call>`` or a final
``<answer>…</answer>``.

``parse_turn`` is strict about what counts as *well-formed* (that share feeds the reward) and lenient about what
can still be executed: a single parseable tool call without a think block runs, but is marked malformed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TOOLS = ("python", "score")

_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


@dataclass
class ToolCall:
    name: str  #: "python" | "score" | "answer"
    arguments: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str | None:
        code = self.arguments.get("code")
        return code if isinstance(code, str) else None


@dataclass
class ParsedTurn:
    call: ToolCall | None  #: what to execute (None: nothing executable)
    well_formed: bool
    think: str = ""
    error: str | None = None  #: why the turn is malformed (shown to the policy)


def _load_call(body: str) -> tuple[ToolCall | None, str | None]:
    try:
        data = json.loads(body.strip())
    except json.JSONDecodeError as exc:
        return None, f"the <tool_call> body is not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None, 'the <tool_call> body must be {"name": ..., "arguments": {...}}'
    name, args = data["name"], data.get("arguments", {})
    if isinstance(args, str):  # some models JSON-encode the arguments twice
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = {"code": args} if name == "python" else {}
    if not isinstance(args, dict):
        return None, "the tool call's arguments must be a JSON object"
    if name not in TOOLS:
        return None, f"unknown tool {name!r}; tools: {', '.join(TOOLS)}"
    if name == "python" and not isinstance(args.get("code"), str):
        return None, 'the python tool needs {"code": "..."}'
    return ToolCall(name, args), None


def parse_turn(text: str) -> ParsedTurn:
    think_m = _THINK.search(text)
    think = think_m.group(1).strip() if think_m else ""
    calls = _CALL.findall(text)
    answers = _ANSWER.findall(text)
    problems: list[str] = []
    if not think_m:
        problems.append("start with <think>…</think>")
    if len(calls) + len(answers) > 1:
        problems.append("give exactly one <tool_call> or <answer> per turn")
    call: ToolCall | None = None
    if calls:
        call, err = _load_call(calls[0])
        if err:
            problems.append(err)
    elif answers:
        call = ToolCall("answer", {"text": answers[0].strip()})
    else:
        problems.append("end the turn with one <tool_call>…</tool_call> or <answer>…</answer>")
    if think_m and call is not None:
        tail_start = text.find("<tool_call>") if calls else text.find("<answer>")
        if tail_start < think_m.end():
            problems.append("the <think> block must come first")
    return ParsedTurn(call=call, well_formed=not problems, think=think,
                      error="; ".join(problems) if problems else None)


def extract_code(text: str) -> str | None:
    """A whole script from a reply: a python tool call, else the first fenced code block (aide, oneshot)."""
    for body in _CALL.findall(text):
        call, _ = _load_call(body)
        if call is not None and call.code:
            return call.code
    m = _FENCE.search(text)
    if m:
        return m.group(1)
    return None


def tool_call_text(name: str, arguments: dict[str, Any], think: str = "") -> str:
    """Render one well-formed react turn (used by the scripted policy and by tests)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<think>{think}</think>\n<tool_call>{body}</tool_call>"


def answer_text(answer: str, think: str = "") -> str:
    return f"<think>{think}</think>\n<answer>{answer}</answer>"
