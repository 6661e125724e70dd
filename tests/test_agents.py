"""Agents: the react format, policy specs, the shared env interface, react / aide / oneshot episodes end to end."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.agents.env import MLEEnv
from engine.agents.format import ToolCall, answer_text, parse_turn, tool_call_text
from engine.agents.policies import load_policy, parse_spec
from engine.agents.policy import Action
from engine.agents.rollout import run_episode
from store.trajectories import Turn
from engine.envs.layout import EnvSpec
from engine.errors import SandmleError

from conftest import DATA

TINY = DATA / "envs" / "tiny-tabular"


@pytest.fixture
def env() -> EnvSpec:
    return EnvSpec.from_dir(TINY)


# ------------------------------------------------------------------ format
def test_parse_turn_well_formed_and_malformed():
    ok = parse_turn(tool_call_text("python", {"code": "print(1)"}, "look"))
    assert ok.well_formed and ok.call.name == "python" and ok.call.code == "print(1)" and ok.think == "look"
    assert parse_turn(tool_call_text("score", {})).call.name == "score"
    ans = parse_turn(answer_text("done", "finished"))
    assert ans.well_formed and ans.call.name == "answer" and ans.call.arguments["text"] == "done"
    no_think = parse_turn('<tool_call>{"name": "python", "arguments": {"code": "1"}}</tool_call>')
    assert not no_think.well_formed and no_think.call.code == "1" and "<think>" in no_think.error
    two = parse_turn("<think>x</think>" + tool_call_text("score", {}) + "<answer>a</answer>")
    assert not two.well_formed and "exactly one" in two.error
    bad_json = parse_turn("<think>x</think><tool_call>{name: python}</tool_call>")
    assert bad_json.call is None and "not valid JSON" in bad_json.error
    unknown = parse_turn('<think>x</think><tool_call>{"name": "shell", "arguments": {}}</tool_call>')
    assert unknown.call is None and "unknown tool" in unknown.error
    no_code = parse_turn('<think>x</think><tool_call>{"name": "python", "arguments": {}}</tool_call>')
    assert no_code.call is None and "needs" in no_code.error
    garbage = parse_turn("hello")
    assert garbage.call is None and not garbage.well_formed
    late_think = parse_turn(tool_call_text("score", {}).replace("<think></think>\n", "") + "<think>x</think>")
    assert not late_think.well_formed


def test_policy_specs():
    assert parse_spec("hf:/m,adapter=/a,temperature=0.5") == ("hf", "/m", {"adapter": "/a", "temperature": "0.5"})
    assert parse_spec("scripted:skill=0.7") == ("scripted", "", {"skill": "0.7"})
    p = load_policy("scripted:skill=0.7,seed=3")
    assert p.name == "scripted:skill=0.7" and p.skill == 0.7 and p.seed == 3
    for bad in ("nope:x", "scripted:skill=2", "scripted:skill=abc", "scripted:strategy=magic", "hf:", "hf:/m,color=red"):
        with pytest.raises(SandmleError):
            load_policy(bad)
    with pytest.raises(SandmleError, match="cannot load model"):
        load_policy("hf:/does/not/exist")


# ------------------------------------------------------------------ the env interface
class Replay:
    """A policy that replays fixed replies (a real Policy; tests drive the env through it)."""

    def __init__(self, replies: list[str]):
        self.replies, self.name, self.seen = list(replies), "replay", []

    def act(self, messages: list[Turn], *, rng_seed: int | None = None) -> Action:
        self.seen.append([m.role for m in messages])
        return Action(text=self.replies.pop(0) if self.replies else "<think>.</think><answer>x</answer>")


def test_env_reset_step_close_terminated_vs_truncated(env, tmp_path):
    from engine.sandbox import get_backend

    backend = get_backend("local", root=tmp_path)
    e = MLEEnv(env.id, env.public, env.grade, backend, max_steps=3)
    task, info = e.reset()
    assert "widget pass inspection" in task and info["n_val"] == 24 and info["n_train"] == 96 and info["score_tool"]
    r = e.step(ToolCall("python", {"code": "import os; print(sorted(os.listdir('.')), sorted(os.listdir('val')))"}))
    assert "'description.md'" in r.observation and "'submission.csv'" not in r.observation and "answers" not in r.observation
    assert "['description.md', 'sample_submission.csv', 'test.csv', 'train.csv']" in r.observation
    assert not r.terminated and not r.truncated and r.reward == 0.0
    r = e.step(ToolCall("score", {}))
    assert "no val/submission.csv yet" in r.observation and r.info["val_score"] is None
    r = e.step(None, error="bad format")
    assert "format error: bad format" in r.observation and r.truncated and not r.terminated  # 3 steps: budget out
    assert e.state.steps == 3 and e.state.python_calls == 1 and e.state.score_calls == 1
    with pytest.raises(SandmleError):
        e.step(ToolCall("answer", {}))
    e.reset()
    r = e.step(ToolCall("answer", {"text": "bye"}))
    assert r.terminated and not r.truncated and "no submission.csv" in r.observation
    ws_path = e.ws.path
    e.close()
    assert not ws_path.exists()


def test_step_timeout_and_episode_timeout(env, tmp_path):
    from engine.sandbox import get_backend

    backend = get_backend("local", root=tmp_path)
    e = MLEEnv(env.id, env.public, env.grade, backend, max_steps=5, step_timeout_s=1.0, episode_timeout_s=60)
    e.reset()
    r = e.step(ToolCall("python", {"code": "import time; time.sleep(30)"}))
    assert "timeout" in r.observation and e.state.timed_out_steps == 1 and not r.truncated
    e.close()
    e = MLEEnv(env.id, env.public, env.grade, backend, max_steps=5, step_timeout_s=30, episode_timeout_s=1.5)
    e.reset()
    r = e.step(ToolCall("python", {"code": "import time; time.sleep(30)"}))
    assert r.truncated and e.state.timed_out and not r.terminated
    e.close()


def test_long_observations_are_cut_head_and_tail(env, tmp_path):
    from engine.sandbox import get_backend

    e = MLEEnv(env.id, env.public, env.grade, get_backend("local", root=tmp_path), observation_chars=500)
    e.reset()
    r = e.step(ToolCall("python", {"code": "print('HEAD'); print('x' * 20000); print('TAIL')"}))
    assert len(r.observation) <= 600 and "HEAD" in r.observation and "TAIL" in r.observation
    assert "characters cut" in r.observation
    e.close()


# ------------------------------------------------------------------ episodes
def test_react_scripted_episode_earns_a_medal_and_is_stored(env, store):
    traj = run_episode(env, load_policy("scripted"), scaffold="react", store=store, rng_seed=0)
    assert traj.status == "done" and traj.terminated and not traj.truncated and not traj.timed_out
    g = traj.grade
    assert g["valid_submission"] and g["any_medal"] and g["score"] >= g["bronze_threshold"]
    assistant = [t for t in traj.turns if t.role == "assistant"]
    assert all(t.well_formed for t in assistant) and [t.tool for t in assistant][:3] == ["python", "python", "score"]
    assert assistant[-1].tool == "answer"
    assert traj.reward == pytest.approx(0.2 + {"gold": 0.7, "silver": 0.6, "bronze": 0.5}[
        next(m for m in ("gold", "silver", "bronze") if g[f"{m}_medal"])] + 0.1)
    back = store.trajectories.get(traj.id)
    assert back.reward == pytest.approx(traj.reward) and back.grade == traj.grade and back.grade["score"] == g["score"]
    assert back.n_turns == len(traj.turns) and back.turns[2].tool == "python"
    assert back.reward_breakdown["terms"]["format"]["value"] == 1.0
    tool_turns = [t for t in back.turns if t.role == "tool"]
    assert tool_turns[0].observation.startswith("[exit 0") and tool_turns[0].code
    assert back.turns == traj.turns and back.state == traj.state and back.sandbox_s == pytest.approx(traj.sandbox_s)
    assert back.turns[2].well_formed is True and back.terminated
    sub = pd.read_csv(traj.submission_path)
    assert list(sub.columns) == ["id", "label"] and len(sub) == 40
    runs = store.query("SELECT env_id, status FROM sandbox_runs WHERE trajectory_id = ?", (traj.id,))
    assert len(runs) == sum(1 for t in assistant if t.tool == "python") and all(r["env_id"] == env.id for r in runs)


def test_scripted_policy_is_deterministic_and_skill_changes_plans(env):
    from engine.agents.policies.scripted import ScriptedPolicy

    def react(**kw):
        return ScriptedPolicy(**kw).in_scaffold("react", "tool_calls")

    first = [Turn("system", "... <tool_call> ... at most 15 turns"), Turn("user", "task A\n# Validation\nval/")]
    a = react(skill=1.0).act(first, rng_seed=5).text
    assert a == react(skill=1.0).act(first, rng_seed=5).text
    summary = 'SUMMARY {"modality": "text", "task": "proba", "rows": 100}'
    second = first + [Turn("assistant", a), Turn("tool", "[exit 0 · ok · 1s]\n" + summary)]
    expert = react(skill=1.0).act(second, rng_seed=5).text
    assert "plan: blend words+chars rich chars; linear words+chars rich chars." in expert
    assert expert.count("blend/words+chars/rich/chars") == 1  # the key itself only where the code sets it
    assert "STRATEGY = 'blend/words+chars/rich/chars'" in expert and "os.chdir('val')" in expert
    assert "open('solution.py', 'w')" in expert  # the reference template, written once
    weak = [react(skill=0.0, seed=s).act(second, rng_seed=5).text for s in range(12)]
    # random single strategies, run on all rows without validation, named only where the code sets them
    assert len({text.split("STRATEGY = '")[1].split("'")[0] for text in weak}) >= 4
    assert not any("plan: " in text or "os.chdir('val')" in text for text in weak)


def _candidates_episode(scores: tuple[float, float], lower: bool = False) -> list[str]:
    """The candidates teacher's react replies when its two validation runs score ``scores`` (fed as the score
    tool's observations)."""
    from engine.agents.policies.scripted import ScriptedPolicy

    policy = ScriptedPolicy(candidates="linear/words/plain/nochars:blend/words+chars/rich/chars").in_scaffold(
        "react", "tool_calls")
    messages = [Turn("system", "... <tool_call> ... at most 8 turns"), Turn("user", "task A\n# Validation\nval/")]
    summary = 'SUMMARY {"modality": "tabular", "task": "label", "rows": 120}'
    said, pending = [], iter(scores)
    for _ in range(8):
        text = policy.act(messages, rng_seed=0).text
        said.append(text)
        if "<answer>" in text:
            break
        if '"name": "score"' in text:
            obs = f"validation rmse = {next(pending)} ({'lower' if lower else 'higher'} is better; val/)"
        else:
            obs = "[exit 0 · ok · 1s]\n" + (summary if len(said) == 1 else "wrote submission.csv")
        messages += [Turn("assistant", text), Turn("tool", obs)]
    return said


def test_the_candidates_teacher_keeps_the_strategy_the_score_tool_read_better():
    """``scripted:candidates=A:B`` tries both on the validation split and trains the one whose score it read is
    better: which one depends on the numbers it was shown, not on the order it was given them in."""
    linear, blend = "linear/words/plain/nochars", "blend/words+chars/rich/chars"
    for scores, lower, kept in (((0.70, 0.81), False, blend), ((0.90, 0.81), False, linear),
                                ((0.70, 0.81), True, linear), ((0.95, 0.20), True, blend)):
        said = _candidates_episode(scores, lower)
        validated = [t.split("STRATEGY = '")[1].split("'")[0] for t in said if "os.chdir('val')" in t]
        assert validated == [linear, blend]  # each candidate once on val/, in the order given
        final = next(t for t in said if "STRATEGY = '" in t and "os.chdir('val')" not in t)
        assert f"Best on validation: {kept.replace('/', ' ')}." in final and f"STRATEGY = '{kept}'" in final
        assert not any(k in t.split("</think>")[0] for t in said for k in (linear, blend))  # no key in a think
        assert "<answer>" in said[-1] and len(said) == 7  # explore, 2 x (val run, score), final run, answer
    p = load_policy("scripted:candidates=linear/words/plain/nochars:blend/words+chars/rich/chars,seed=1")
    assert p.name == "scripted:skill=1,candidates=linear/words/plain/nochars:blend/words+chars/rich/chars"
    for bad in ("scripted:candidates=linear/words/plain/nochars", "scripted:candidates=magic:blend/words/rich/chars",
                "scripted:strategy=linear,candidates=linear/words/plain/nochars:blend/words/rich/chars"):
        with pytest.raises(SandmleError):
            load_policy(bad)


def test_scripted_policy_writes_the_reply_format_of_its_scaffold_not_of_the_prompt():
    """The scaffold says which reply format it plays (SCAFFOLDS' reply), whatever its prompt's words: the same
    react-like prompt gets a tool call in react's format and a whole script in oneshot's."""
    from engine.agents.policies.scripted import REPLY_WRITERS, ScriptedPolicy
    from engine.agents.policy import PolicyError
    from engine.agents.scaffolds import REPLIES, SCAFFOLDS

    assert set(REPLY_WRITERS) == set(REPLIES)  # it writes every format a scaffold may ask for
    messages = [Turn("system", "... <tool_call> ... tree search ..."), Turn("user", "task A")]
    policy = ScriptedPolicy()
    as_react = policy.in_scaffold("react", SCAFFOLDS["react"].reply).act(messages, rng_seed=0).text
    as_oneshot = policy.in_scaffold("oneshot", SCAFFOLDS["oneshot"].reply).act(messages, rng_seed=0).text
    assert as_react.startswith("<think>") and "<tool_call>" in as_react and "```python" not in as_react
    assert "```python" in as_oneshot and "<tool_call>" not in as_oneshot
    with pytest.raises(PolicyError, match="no scaffold to play in"):
        policy.act(messages)  # never guessed from the prompt
    with pytest.raises(PolicyError, match="asks for 'chat' replies"):
        policy.in_scaffold("chatty", "chat")


def test_scripted_weak_policy_can_fail_to_medal(env):
    traj = run_episode(env, load_policy("scripted:strategy=constant"), scaffold="react", rng_seed=0)
    assert traj.grade["valid_submission"] and not traj.grade["any_medal"]
    assert traj.reward == pytest.approx(0.2 + 0.1)


@pytest.mark.slow
def test_aide_and_oneshot_scaffolds_with_the_scripted_policy(env, store):
    aide = run_episode(env, load_policy("scripted"), scaffold="aide", store=store, rng_seed=0, max_turns=4)
    journal = aide.state["journal"]
    assert [n["stage"] for n in journal][:2] == ["draft", "draft"] and len(journal) == 4
    assert aide.terminated and aide.grade["valid_submission"] and aide.grade["any_medal"]
    assert journal[0]["code"].startswith("STRATEGY = 'blend/words+chars/rich/chars'\n")
    best = max((n for n in journal if not n["buggy"]), key=lambda n: n["metric"])
    assert best["metric"] is not None
    one = run_episode(env, load_policy("scripted"), scaffold="oneshot", store=store, rng_seed=0)
    assert [t.role for t in one.turns] == ["system", "user", "assistant", "tool"]
    assert one.terminated and one.grade["valid_submission"]
    assert store.trajectories.count() == 2


def test_react_budget_truncates_and_bad_replies_still_finish(env, store):
    replies = ["nonsense", tool_call_text("python", {"code": "print('hi')"}, "x"),
               '<think>y</think><tool_call>{"name": "python", "arguments": {"code": "1/0"}}</tool_call>']
    traj = run_episode(env, Replay(replies), scaffold="react", store=store, max_turns=3)
    assert traj.truncated and not traj.terminated and traj.status == "done"
    assert [t.well_formed for t in traj.turns if t.role == "assistant"] == [False, True, True]
    assert "ZeroDivisionError" in traj.turns[-1].observation
    assert not traj.grade["valid_submission"] and traj.grade["error"] == "no submission.csv was produced"
    assert traj.reward == pytest.approx(0.1 * 2 / 3)


def test_a_failing_policy_ends_its_episode_with_status_error(env, store):
    class Broken:
        name = "broken"

        def act(self, messages, *, rng_seed=None):
            raise RuntimeError("endpoint down")

    traj = run_episode(env, Broken(), store=store)
    assert traj.status == "error" and "endpoint down" in traj.error and traj.reward == 0.0
    assert store.trajectories.get(traj.id).status == "error"


def test_trajectory_rows_hold_json_friendly_fields(env):
    traj = run_episode(env, load_policy("scripted:strategy=linear"), scaffold="oneshot")
    json.dumps(traj.to_dict())


@pytest.mark.slow
def test_react_scripted_episode_earns_a_medal_on_a_synthesized_environment(seeded_store):
    from engine.synthesis.pipeline import synthesize

    report = synthesize(seeded_store, "tabular-binary-manufacturing", 1, rng_seed=7)
    assert report.verified, report.to_dict()
    env = EnvSpec.from_store(seeded_store, report.verified[0].env_id)
    assert env.leaderboard and env.thresholds
    traj = run_episode(env, load_policy("scripted"), scaffold="react", store=seeded_store, rng_seed=0)
    g = traj.grade
    assert traj.terminated and g["valid_submission"] and g["any_medal"], g
    assert traj.reward >= 0.2 + 0.5 + 0.1 - 1e-9
    assert seeded_store.trajectories.get(traj.id).env_id == env.id


def test_a_long_column_table_is_cut_in_the_task_prompt_so_its_later_sections_stay(tmp_path):
    """A 192-column table used to fill the whole description budget (the prompt then had no evaluation or
    submission section): the prompt keeps 20 feature rows, says how many more there are, and keeps the target."""
    from engine.agents.prompts import KEEP_COLUMNS, compact_columns, task_prompt

    rows = [f"| `x{i}` | train, test | Feature {i} of a wide table, described at some length |" for i in range(192)]
    desc = "\n".join(["# Task", "### Columns", "", "| column | in | description |", "|---|---|---|", *rows,
                      "| `label` | train only | Target. |", "", "## Evaluation", "Accuracy.", "",
                      "## Submission format", "id,label"])
    public = tmp_path / "public"
    public.mkdir()
    (public / "description.md").write_text(desc)
    prompt = task_prompt(public)
    assert "## Evaluation" in prompt and "## Submission format" in prompt and "[description cut]" not in prompt
    assert "| `x19` |" in prompt and "| `x20` |" not in prompt and "| `label` | train only |" in prompt
    assert f"{192 - KEEP_COLUMNS} more feature columns" in prompt
    short = "\n".join(["### Columns", *rows[:40], "| `label` | train only | Target. |"])
    assert compact_columns(short) == short  # 40 rows or fewer: as written


def test_the_explore_summary_lists_at_most_8_columns_to_predict(tmp_path, monkeypatch, capsys):
    """A 22-class task listed 22 names no training task has (leaf-species), and tiny lost its reply format after
    reading them: the summary keeps the first 8 and says how many more."""
    import json

    import pandas as pd

    from engine.agents.templates import EXPLORE

    classes = [f"Species_{i}" for i in range(22)]
    pd.DataFrame({"id": [1, 2], "x": [0.1, 0.2], "species": ["Species_0", "Species_1"]}).to_csv(
        tmp_path / "train.csv", index=False)
    pd.DataFrame({"id": [3], "x": [0.3]}).to_csv(tmp_path / "test.csv", index=False)
    pd.DataFrame({"id": [3], **{c: [1 / 22] for c in classes}}).to_csv(tmp_path / "sample_submission.csv",
                                                                       index=False)
    monkeypatch.chdir(tmp_path)
    exec(compile(EXPLORE, "explore", "exec"), {})
    summary = json.loads(capsys.readouterr().out.split("SUMMARY ", 1)[1])
    assert summary["predict"] == classes[:8] + ["+14 more"] and summary["task"] == "proba"
    (tmp_path / "sample_submission.csv").write_text("id,species\n3,Species_0\n")
    exec(compile(EXPLORE, "explore", "exec"), {})
    assert json.loads(capsys.readouterr().out.split("SUMMARY ", 1)[1])["predict"] == ["species"]
