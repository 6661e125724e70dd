"""Prompts of the scaffolds. Short on purpose: tiny models read them too, and a tokenizer is trained on them."""

from __future__ import annotations

from pathlib import Path

from .score_tool import VAL_DIR, VAL_SUBMISSION

REACT_SYSTEM = """You are a machine-learning engineer solving a task in a sandbox with no network.
Each turn: think inside <think>...</think>, then give exactly one tool call or the final answer.
Tool call: <tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call> runs Python in the task folder \
(files persist between calls; print what you need to see).
Tool call: <tool_call>{"name": "score", "arguments": {}}</tool_call> grades val/submission.csv against labels \
held out from the training rows.
Final answer: <answer>done</answer> once submission.csv (predictions for test.csv) is written.
You have at most {max_turns} turns."""

AIDE_SYSTEM = """You are a machine-learning engineer improving a solution by tree search.
Reply with a short plan inside <think>...</think>, then one complete Python script in a ```python block.
The script runs in the task folder. It must write val/submission.csv (predictions for val/test.csv, trained on \
val/train.csv) and submission.csv (predictions for test.csv, trained on train.csv)."""

ONESHOT_SYSTEM = """You are a machine-learning engineer. Write one complete Python script that solves the task.
Reply with a short plan inside <think>...</think>, then the script in a ```python block. It runs once, in the \
task folder, and must write submission.csv (predictions for test.csv, trained on train.csv)."""


#: the last lines of a scaffold's task message: the reply it wants, where a small model reads it (next to the
#: reply) and not only in the system prompt hundreds of tokens back
REACT_REPLY = "# Reply\nThink inside <think>...</think>, then one tool call or the final answer."
SCRIPT_REPLY = "# Reply\nThink inside <think>...</think>, then the whole script in one ```python block."


def with_reply(task: str, reply: str) -> str:
    """A task message ending with the reply format (:data:`REACT_REPLY` or :data:`SCRIPT_REPLY`)."""
    return f"{task.rstrip()}\n\n{reply}"


def file_listing(public: Path, limit: int = 30) -> str:
    public = Path(public)
    lines = []
    for p in sorted(public.iterdir())[:limit]:
        if p.is_dir():
            n = sum(1 for _ in p.rglob("*") if _.is_file())
            lines.append(f"- {p.name}/ ({n} files)")
        else:
            lines.append(f"- {p.name} ({p.stat().st_size} bytes)")
    return "\n".join(lines)


#: a description's column table longer than this many feature rows is cut to :data:`KEEP_COLUMNS` of them in the
#: task prompt (every non-feature row kept): a 192-column table filled the whole description budget, so the
#: prompt lost its evaluation and submission sections (the leaf-species seed)
MAX_COLUMNS = 40
KEEP_COLUMNS = 20


def compact_columns(desc: str, max_rows: int = MAX_COLUMNS, keep: int = KEEP_COLUMNS) -> str:
    """``desc`` with a long markdown column table (rows ``| `name` | train, test | ... |``) cut to its first
    ``keep`` feature rows and one row saying how many more there are; the target rows (``train only``) stay."""
    lines = desc.split("\n")
    features = [i for i, line in enumerate(lines) if line.startswith("| `") and "| train, test |" in line]
    if len(features) <= max_rows:
        return desc
    dropped = set(features[keep:])
    note = (f"| … | train, test | {len(dropped)} more feature columns like those above (train.csv and test.csv "
            "name them all) |")
    out = [line for i, line in enumerate(lines) if i not in dropped]
    out.insert(features[keep], note)
    return "\n".join(out)


def task_prompt(public: Path, *, with_validation: bool = True, max_description_chars: int = 6000) -> str:
    public = Path(public)
    desc_path = public / "description.md"
    desc = desc_path.read_text(encoding="utf-8") if desc_path.is_file() else "(no description.md)"
    desc = compact_columns(desc)
    if len(desc) > max_description_chars:
        desc = desc[:max_description_chars] + "\n... [description cut]"
    parts = [f"# Task\n{desc.strip()}", f"# Files\n{file_listing(public)}"]
    if with_validation:
        parts.append(
            f"# Validation\n{VAL_DIR}/ holds train.csv, test.csv and sample_submission.csv carved from the training "
            f"rows. Write predictions for {VAL_DIR}/test.csv to {VAL_SUBMISSION} to use the score tool."
        )
    parts.append("# Goal\nWrite submission.csv in the format of sample_submission.csv.")
    return "\n\n".join(parts)


def react_system(max_turns: int) -> str:
    return REACT_SYSTEM.replace("{max_turns}", str(max_turns))


def aide_stage_prompt(stage: str, task: str, *, code: str | None = None, output: str | None = None,
                      metric: float | None = None, journal: str = "") -> str:
    """The user message of one aide step: the task, the journal summary and the stage's request."""
    parts = [task]
    if journal:
        parts.append(f"# Journal\n{journal}")
    if stage == "draft":
        parts.append("# Stage: draft\nWrite a new solution script.")
    elif stage == "debug":
        parts.append(f"# Stage: debug\nThis script failed. Fix it.\n```python\n{code}\n```\n# Output\n{output}")
    else:
        parts.append(f"# Stage: improve\nThe best script so far has validation score {metric}. Improve it with one "
                     f"change.\n```python\n{code}\n```")
    return with_reply("\n\n".join(parts), SCRIPT_REPLY)
