"""Synthesis in the workbench: the LLM spend per seed on the Seeds screen, and `e` on an environment's Generator tab
(edit generator.py in $EDITOR, then re-verify it as a new environment)."""

from __future__ import annotations

import sys

from textual.widgets import Input, TabbedContent

from test_app import wait_for
from workbench.app import Workbench
from demo_store import populate


async def test_edit_generator_reverifies_the_edited_program_as_a_new_environment(store, tmp_path, monkeypatch):
    ids = populate(store)
    editor = tmp_path / "editor.py"  # an "editor" that appends a line to the file it is given
    editor.write_text("import sys\nopen(sys.argv[1], 'a').write('# edited in the workbench\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    monkeypatch.delenv("VISUAL", raising=False)
    app = Workbench(store=store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "environments")
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "EnvDetailScreen" and app.screen.ready)
        await pilot.press("g")  # not on the Generator tab: nothing happens
        await pilot.pause()
        assert not app.jobs.jobs
        await pilot.press(*["right_square_bracket"] * 4)  # Overview, Data, Board, Verify, Generator
        await wait_for(pilot, lambda: app.screen.query_one("#env-tabs", TabbedContent).active == "tab-generator")
        await pilot.press("g")
        await wait_for(pilot, lambda: len(app.jobs.jobs) == 1)
        (job,) = app.jobs.jobs.values()
        await wait_for(pilot, lambda: store.runs.get(job.run_id)["status"] in ("done", "failed"), timeout=90)
    (copy,) = (store.data_dir / "edits").iterdir()
    assert copy.name.startswith(ids["envs"][0]) and copy.read_text().endswith("# edited in the workbench\n")
    # the demo's program does not follow the generator contract: the new environment is rejected, with the reason
    new = [e for e in store.envs.list() if e["id"] not in ids["envs"]]
    assert len(new) == 1 and new[0]["seed_id"] == "forest-cover" and new[0]["status"] == "rejected"
    assert new[0]["reason"] == "generator.py never reads the --out option; generator.py never reads the --seed option"
    run = store.runs.get(job.run_id)  # the job's row is the run `envs add` made (one run per workbench job)
    assert run["config"]["mode"] == "envs add" and run["summary"]["verified"] == 0
    assert run["summary"]["env_id"] == new[0]["id"]


async def test_seeds_screen_shows_what_synthesis_cost_per_role_and_per_verified_environment(store):
    ids = populate(store)  # two verified forest-cover environments
    for role, cost, tokens in (("engineer", 0.03, 9000), ("engineer", 0.02, 7000), ("reviewer", 0.001, 800)):
        store.envs.add_attempt({"env_id": ids["envs"][0], "seed_id": "forest-cover", "role": role, "verdict": "ok",
                                "usage": {"provider": "anthropic", "model": "claude-sonnet-4-5", "input_tokens": tokens,
                                          "output_tokens": 500, "cache_read_tokens": 0, "cost_usd": cost}})
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.screen.ready)
        app.screen.query_one("#seed-filter", Input).value = "forest"
        await pilot.pause(0.2)
        text = app.screen.query_one("#seed-detail").text
    assert "### Synthesis cost" in text
    assert "3 LLM calls · 18,300 tokens · **$0.0510** · $0.0255 and 9,150 tokens per verified environment" in text
    assert "| engineer | 2 | 16,000 | 1,000 | 0 | 0.0500 |" in text
