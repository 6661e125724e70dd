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


def task_prompt(public: Path, *, with_validation: bool = True, max_description_chars: int = 6000) -> str:
    public = Path(public)
    desc_path = public / "description.md"
    desc = desc_path.read_text(encoding="utf-8") if desc_path.is_file() else "(no description.md)"
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
    return "\n\n".join(parts)
