"""Pilot tests of the Environments, Sandbox, Training and Eval screens on realistic rows in a real store."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, Static, TabbedContent

from test_app import goto, wait_for
from store.trajectories import Trajectory
from workbench.app import Workbench
from demo_store import populate


@pytest.fixture
def demo(store):
    return store, populate(store)


def static_text(widget: Static) -> str:
    """What a Static shows, as plain text (markup, Rich Text and Rich groups alike)."""
    console = Console(width=widget.size.width or 80, file=io.StringIO(), record=True)
    console.print(widget.content)
    return console.export_text()


async def test_environments_filter_detail_preview_and_export(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "environments")
        table = app.screen.query_one("#envs-table", DataTable)
        assert table.row_count == 3
        await pilot.press("v")  # verified only
        await pilot.pause()
        assert table.row_count == 2 and app.screen.status == "verified"
        await pilot.press("v")  # rejected only: the reason is shown
        await pilot.pause()
        assert table.row_count == 1
        assert "not ordered" in static_text(app.screen.query_one("#env-summary"))
        await pilot.press("v", "v")  # back to all
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "EnvDetailScreen" and app.screen.ready)
        detail = app.screen
        await pilot.press("right_square_bracket")  # the next tab: Data
        await pilot.pause(0.3)
        assert detail.query_one("#env-tabs", TabbedContent).active == "tab-data"
        train = detail.query_one("#preview-train")
        await wait_for(pilot, lambda: train.n_rows == 60)
        stats = {s["column"]: s for s in train.stats}
        assert stats["age"]["missing"] == pytest.approx(10.0)
        assert stats["label"]["target"] and stats["x1"]["shape"]
        assert "label distribution of label" in static_text(detail.query_one("#preview-labels"))
        assert detail.query_one("#preview-test").n_rows == 20
        board = detail.query_one("#env-board", DataTable)
        entries = store.envs.leaderboard(ids["envs"][0])
        families = {e.get("family") or e.get("source") or "entries" for e in entries}
        assert board.row_count == len(entries) + len(families)  # a line per family, then its entries
        assert "gold 0.9" in static_text(detail.query_one("#env-thresholds"))
        assert "ordering" in static_text(detail.query_one("#env-verification"))
        await pilot.press("x")  # an MLE-bench-style competition folder under <data dir>/exports
        exports = store.data_dir / "exports"
        await wait_for(pilot, (exports / ids["envs"][0] / "config.yaml").exists, timeout=60)
        await pilot.press("x")  # that folder is taken now: it asks for another, suggesting a free one
        await wait_for(pilot, lambda: type(app.screen).__name__ == "PromptScreen")
        assert app.screen.query_one(Input).value == str(exports / f"{ids['envs'][0]}-2")
        await pilot.press("enter")
        await wait_for(pilot, (exports / f"{ids['envs'][0]}-2" / "config.yaml").exists, timeout=60)
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "EnvironmentsScreen"


async def test_environments_page_through_many(seeded_store):
    store = seeded_store
    from demo_store import add_envs

    add_envs(store, 1)
    rows = [{"id": f"env-bulk-{i:05d}", "title": f"bulk {i}", "status": "verified", "modality": "tabular",
             "task_type": "binary", "metric": "accuracy", "lower_is_better": False, "id_column": "id",
             "target_columns": ["y"], "created_at": f"2026-12-01T00:00:{i % 60:02d}.{i:06d}"} for i in range(450)]
    for r in rows:
        store.envs.add(r)
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")
        await wait_for(pilot, lambda: app.current_mode == "environments")
        info = app.screen.query_one("#envs-info")
        assert "1–100 of 451" in static_text(info)
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot.pause()
        assert "201–300 of 451" in static_text(info)
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert "101–200 of 451" in static_text(info)
        await pilot.press("slash", *"bulk-0044")
        await pilot.pause()
        assert app.screen.query_one("#envs-table", DataTable).row_count == 10


async def test_sandbox_log_tails_a_growing_file_and_searches(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "3")
        log = app.screen.query_one("#sandbox-log")
        assert log.line_count == 2 and log.line(1) == "starting"
        with open(ids["live_log"], "a") as f:
            f.write("".join(f"step {i} ok\n" for i in range(500)))
        await wait_for(pilot, lambda: log.line_count == 502)
        assert log.line(501) == "step 499 ok"
        assert log.is_vertical_scroll_end  # following the end
        # the finished run's log, then a search inside it
        await pilot.press("down")
        await wait_for(pilot, lambda: log.path is not None and log.path.name == "sbx-done.log" and log.loaded)
        await pilot.press("enter", "home")  # into the log, to its top: a search starts from the view
        await pilot.press("slash", *"epoch 3", "enter")
        await wait_for(pilot, lambda: log.current_line == 5)  # "epoch 3 …" is the 6th line
        await pilot.press("n")
        await wait_for(pilot, lambda: log.current_line == 32)  # next: "epoch 30 …"


async def test_sandbox_list_fills_the_screen_running_first_and_filters(demo):
    store, ids = demo
    for i in range(30):  # older finished runs
        store.sandbox.start({"id": f"sbx-old-{i:02d}", "env_id": ids["envs"][1], "backend": "local",
                             "command": "python step.py", "run_id": "grpo-demo" if i % 2 else None,
                             "started_at": f"2026-11-29T0{i % 10}:00:{i:02d}.000+00:00"})
        store.sandbox.finish(f"sbx-old-{i:02d}", status="ok" if i % 3 else "error", exit_code=0 if i % 3 else 1,
                             wall_s=0.5)
    store.sandbox.start({"id": "sbx-late", "backend": "local", "command": "python late.py"})  # newest, running
    app = Workbench(store=store)
    async with app.run_test(size=(80, 40)) as pilot:
        await goto(pilot, "3")
        table = app.screen.query_one("#sandbox-table", DataTable)
        assert table.size.height >= 15  # half of a 40-row terminal, not a fixed 7 rows
        keys = [row.value for row in table.rows]
        assert keys[:2] == ["sbx-late", "sbx-live"] and keys[2] == "sbx-done"  # running first, newest first
        await pilot.press("v")  # running only
        await pilot.pause()
        assert [row.value for row in table.rows] == ["sbx-late", "sbx-live"]
        await pilot.press("v", "v")  # errors only
        await pilot.pause()
        assert table.row_count == 10 and all("error" in str(table.get_row_at(i)[1]) for i in range(10))
        await pilot.press("v", "v")  # (timeout,) all again
        await pilot.press("slash", *"grpo-demo", "enter")  # runs of one training run
        await pilot.pause()
        assert table.row_count == 15 and app.focused is table
        assert "15 of 15 matching 'grpo-demo'" in static_text(app.screen.query_one("#sandbox-info"))


async def test_log_view_opens_a_big_log_lazily(store, tmp_path):
    from workbench.widgets.log_view import LogView

    big = tmp_path / "big.log"
    with open(big, "w") as f:
        for block in range(20):
            f.write("".join(f"line {block * 10000 + i} of a long training log\n" for i in range(10000)))
    store.sandbox.start({"id": "sbx-big", "backend": "local", "command": "python big.py", "log_path": str(big)})
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "3")
        log = app.screen.query_one(LogView)
        assert log.line_count == 200_000
        assert log.line(199_999) == "line 199999 of a long training log"
        log.search("LINE 123456 ")
        await wait_for(pilot, lambda: log.current_line == 123_456)
        log.search("line 17 of", forward=False)
        await wait_for(pilot, lambda: log.current_line == 17)


async def test_training_curves_pick_up_a_new_point_and_rollouts_compare(demo):
    store, ids = demo
    run = store.runs.create("grpo", {"model": "tiny"}, run_id="grpo-live")
    store.runs.log_metrics(run, 1, {"reward_mean": 0.25, "loss": 1.0})
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        table = app.screen.query_one("#runs-table", DataTable)
        assert table.row_count == 2
        curves = app.screen.query_one("#run-curves")
        await wait_for(pilot, lambda: curves.series.get("reward_mean") == [(1, 0.25)])
        # another process (a trainer) writes a metric point: the curve picks it up
        code = ("from store import Store; s = Store(); "
                "s.runs.log_metrics('grpo-live', 2, {'reward_mean': 0.5, 'medal_rate': 0.25, 'loss': 0.8})")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        await wait_for(pilot, lambda: len(curves.series.get("reward_mean", [])) == 2)
        assert curves.series["medal_rate"] == [(2, 0.25)]
        assert curves.names() == ["reward_mean", "medal_rate"]
        await pilot.press("m")  # every metric the run logs has a view
        assert curves.view == "loss" and curves.names() == ["loss"]
        await pilot.press("m")
        assert curves.view == "rates"
        info = app.screen.query_one("#run-info")
        assert "⚠" not in static_text(info)
        # GRPO flags a collapse in its metrics: the run's line says so while the run goes on
        code = "from store import Store; s = Store(); s.runs.log_metrics('grpo-live', 3, {'reward_mean': 0.1, 'collapse': 1.0})"
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        await wait_for(pilot, lambda: static_text(info).startswith("⚠ possible collapse at step 3 · grpo-live"))


async def test_eval_screen_shows_each_run_and_its_table_takes_focus(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        runs = app.screen.query_one("#eval-runs", DataTable)
        # name, policy, adapter (named by the run that trained it), scaffold, episodes, medal, valid, rank
        assert [str(c) for c in runs.get_row_at(0)] == ["SFT+GRPO heldout", "hf:tiny", "grpo-demo", "react", "6",
                                                        "50%", "100%", "0.65"]
        assert str(runs.get_row_at(1)[0]) == "SFT heldout" and str(runs.get_row_at(1)[5]) == "17%"
        summary = static_text(app.screen.query_one("#eval-summary"))
        # overall: per seed, the mean over environments; then mean ± SEM over seeds (as `sandmle eval`)
        assert "6 episodes" in summary and "medal 50% ± 0%" in summary and "rank 0.650 ± 0.058" in summary
        results = app.screen.query_one("#eval-results", DataTable)
        assert results.row_count == 2 and str(results.get_row_at(0)[3]) == "33%±33%"
        assert runs.region.right <= 80 and results.region.bottom <= 23  # on screen at 80x24
        await pilot.press("tab")
        assert app.focused is results
        await pilot.press("down")
        assert results.cursor_row == 1
        await pilot.press("enter")  # that environment's episodes of the run
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TrajectoriesScreen" and app.screen.ready)
        assert app.screen.env_id == "env-tab-001" and app.screen.run_id == "eval-demo"
        episodes = app.screen.query_one("#traj-table", DataTable)
        assert [r.value for r in episodes.rows] == ["eval-demo-1-0", "eval-demo-1-1", "eval-demo-1-2"]
        await wait_for(pilot, lambda: len(app.screen.query(".traj-turn")) == 3)  # what the agent did, turn by turn


async def test_rollout_turns_are_reachable_by_keyboard(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TrajectoriesScreen" and app.screen.ready)
        screen = app.screen
        view = screen.query_one("#traj-left")
        await wait_for(pilot, lambda: len(view.query(".traj-turn")) == 3)
        assert view.trajectory.id == "traj-0"
        await pilot.press("tab")
        assert app.focused is view
        await pilot.press("shift+tab")  # back to the table; enter on a rollout moves into its turns too
        assert app.focused is screen.query_one("#traj-table", DataTable)
        await pilot.press("enter")
        assert app.focused is view
        turns = list(view.query(".traj-turn"))

        def visible(widget) -> bool:
            top = widget.virtual_region.y - view.scroll_y
            return 0 <= top < view.scrollable_content_region.height

        # it opens on the first assistant turn (system prompt and task folded into one line)
        assert visible(turns[0]) and not visible(turns[1])
        assert "▸ system + task" in static_text(view.query_one(".traj-prelude"))
        first = static_text(turns[0])
        assert "#1 python ✓ · 38 tok 0.4s · ran 1.1s" in first and "df = pd.read_csv" in first
        assert "… 3 lines …" in first and "11  +0.600" in first  # a long observation: its head and tail
        await pilot.press("pagedown")
        await pilot.pause()
        assert visible(turns[1]) and "#2 python" in static_text(turns[1])
        await pilot.press("enter")  # unfold the prompt
        assert "You are a machine-learning engineer" in static_text(view.query_one(".traj-prelude"))
        # side by side, the same view; escape leaves compare mode first, then the screen
        await pilot.press("c")
        await pilot.pause()
        right = screen.query_one("#traj-right")
        assert not right.has_class("hidden") and right.trajectory.id == "traj-1"
        assert len(right.query(".traj-turn")) == 3
        assert "ValueError" in static_text(list(right.query(".traj-turn"))[1])
        assert "s00012/g01" in static_text(screen.query_one("#traj-info"))
        await pilot.press("escape")
        await pilot.pause()
        assert right.has_class("hidden") and app.screen is screen
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "TrainingScreen"


async def test_environments_refresh_when_another_process_adds_one(demo):
    store, ids = demo
    app = Workbench(store=store, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await wait_for(pilot, lambda: app.screen.ready)
        seeds = app.screen.query_one("#seeds-table", DataTable)
        forest = seeds.get_row_index("forest-cover")
        assert str(seeds.get_row_at(forest)[-1]) == "2/3"
        await goto(pilot, "2")
        table = app.screen.query_one("#envs-table", DataTable)
        assert table.row_count == 3
        code = ("from store import Store; s = Store(); s.envs.add({'id': 'forest-cover-0a1b2c3d', 'seed_id': "
                "'forest-cover', 'title': 'new', 'status': 'verified', 'modality': 'tabular', 'task_type': 'binary', "
                "'metric': 'accuracy', 'lower_is_better': False, 'id_column': 'id', 'target_columns': ['y']})")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        await wait_for(pilot, lambda: table.row_count == 4)
        assert "1–4 of 4" in static_text(app.screen.query_one("#envs-info"))
        await pilot.press("1")  # a screen that was away re-reads when it comes back
        await wait_for(pilot, lambda: str(seeds.get_row_at(forest)[-1]) == "3/4")


async def test_environment_split_moves_by_key_and_the_launch_form_counts_it(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "2")
        table = app.screen.query_one("#envs-table", DataTable)
        assert str(table.get_row_at(0)[2]) == "train"
        await pilot.press("p")
        await pilot.pause()
        assert store.envs.get("env-tab-000")["split"] == "heldout" and str(table.get_row_at(0)[2]) == "heldout"
        assert "1 train · 1 heldout verified" in static_text(app.screen.query_one("#envs-info"))
        store.envs.update("env-tab-001", split="real")  # a real competition never moves into training
        app.screen.reload()
        await pilot.press("down", "p")
        await pilot.pause()
        assert store.envs.get("env-tab-001")["split"] == "real"
        await goto(pilot, "4")
        await pilot.press("l")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "LaunchFormScreen")
        form = app.screen
        info = form.query_one("#launch-envs-info")
        assert str(info.render()).startswith("split train: 0 verified environments")
        form.query_one("#launch-envs").value = "heldout"
        await pilot.pause()
        assert str(info.render()) == "split heldout: 1 verified environment"
        form.query_one("#launch-envs").value = "all"  # every split but the real competitions
        await pilot.pause()
        assert str(info.render()) == "split all: 1 verified environment"


async def test_every_run_shows_wall_time_and_what_an_api_cost(demo):
    from workbench.runinfo import run_cost

    store, ids = demo
    run = store.runs.create("eval", {"policy": "anthropic:claude-haiku-4-5", "scaffold": "react"}, run_id="eval-api",
                            name="haiku react")
    store.runs.update(run, started_at="2026-11-30T05:00:00.000+00:00")
    for k in range(2):  # 1M input + 0.2M output tokens at $1 / $5 per million: $2 each
        store.trajectories.add(Trajectory(id=f"traj-api-{k}", run_id=run, env_id="env-tab-000",
                                          policy="anthropic:claude-haiku-4-5", scaffold="react", reward=0.2,
                                          state={"usage": {"input_tokens": 1_000_000, "output_tokens": 200_000}}))
    store.runs.add_eval_results(run, [{"env_id": "env-tab-000", "policy": "anthropic:claude-haiku-4-5", "scaffold": "react",
                                       "rng_seed": 0, "valid": True, "rank": 0.5, "reward": 0.2}])
    store.runs.finish(run, "done")
    store.runs.update(run, ended_at="2026-11-30T05:03:30.000+00:00")
    assert run_cost(store, store.runs.get(run)) == pytest.approx(4.0)
    synth = store.runs.create("synthesis", {"seed_id": "forest-cover", "count": 3, "backend": "anthropic"})
    store.runs.update(synth, started_at="2026-11-30T04:00:00.000+00:00")
    for cost in (0.0125, 0.02):
        store.envs.add_attempt({"run_id": synth, "seed_id": "forest-cover", "role": "analyst", "attempt": 1,
                                "backend": "anthropic", "verdict": "ok", "usage": {"cost_usd": cost}})
    assert run_cost(store, store.runs.get(synth)) == pytest.approx(0.0325)
    store.runs.finish(synth, "done", summary={"verified": 2})
    store.runs.update(synth, ended_at="2026-11-30T04:01:05.000+00:00")
    assert run_cost(store, store.runs.get(store.runs.create("grpo", {"model": "tiny"}))) == 0.0
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        summary = " ".join(static_text(app.screen.query_one("#eval-summary")).split())  # as one line
        assert "haiku react · anthropic:claude-haiku-4-5 · done" in summary and "wall 3m30s · $4.00" in summary
        # the policy column keeps the model when kind and model do not both fit
        row = app.screen.query_one("#eval-runs", DataTable).get_row("eval-api")
        assert str(row[1]) == "claude-hai…"
        await goto(pilot, "4")
        runs = app.screen.query_one("#runs-table", DataTable)
        assert str(runs.get_row_at(runs.get_row_index("grpo-demo"))[-1]) == "5m00s"
        await goto(pilot, "1")  # a seed lists its synthesis runs, those of the CLI too
        seeds = app.screen.query_one("#seeds-table", DataTable)
        seeds.move_cursor(row=seeds.get_row_index("forest-cover"))
        await pilot.pause()
        detail = app.screen.query_one("#seed-detail").text
        assert f"`{synth}` · done · 2/3 verified · anthropic · wall 1m05s · $0.033" in detail


def test_short_ids_keep_the_end_that_tells_them_apart():
    from workbench.fmt import short_id
    from workbench.widgets.metric_curves import integer_ticks, views_for

    a, b = "tabular-binary-manufacturing-1a2b3c4d", "tabular-binary-manufacturing-9f8e7d6c"
    assert short_id(a, 22) != short_id(b, 22) and short_id(a, 22).endswith("1a2b3c4d") and len(short_id(a, 22)) == 22
    assert short_id("env-tab-000", 22) == "env-tab-000"
    assert integer_ticks(1, 12) == [1, 4, 7, 10, 12] and integer_ticks(3, 3) == [3] and integer_ticks(1, 2) == [1, 2]
    views = views_for({"reward_mean", "loss", "kl", "grad_norm", "clip_fraction", "step_s", "skipped_groups", "tokens"})
    assert list(views) == ["rates", "loss", "KL", "grad norm", "clip fraction", "step time", "skipped groups", "tokens"]


async def test_an_eval_in_progress_updates_its_row(demo):
    store, ids = demo
    app = Workbench(store=store, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        runs = app.screen.query_one("#eval-runs", DataTable)
        assert str(runs.get_row_at(0)[4]) == "6"
        # another process stores one more episode and beats the run, as `sandmle eval` does after each episode
        code = ("from store import Store; s = Store(); s.runs.add_eval_results('eval-demo', [{'env_id': 'env-tab-000', "
                "'policy': 'hf:tiny', 'scaffold': 'react', 'rng_seed': 3, 'valid': False, 'reward': 0.0}]); "
                "s.runs.heartbeat('eval-demo')")
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
        await wait_for(pilot, lambda: str(runs.get_row_at(0)[4]) == "7")
        assert str(runs.get_row_at(0)[6]) == "75%"  # valid per seed: 100%, 100%, 100% and 0% (seed 3: one invalid)
async def test_eval_compare_two_runs_per_environment(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        screen = app.screen
        results = screen.query_one("#eval-results", DataTable)
        await pilot.press("c", "down")  # A = SFT+GRPO (eval-demo)
        assert "A = SFT+GRPO heldout: c on another run compares" in static_text(screen.query_one("#eval-summary"))
        await pilot.press("c")  # B = SFT (eval-sft)
        await pilot.pause()
        summary = static_text(screen.query_one("#eval-summary"))
        assert "SFT heldout − SFT+GRPO heldout · medal rate" in summary
        assert "overall -33pp" in summary and "over 6 paired episodes in 2 env(s)" in summary
        # per environment: medal rate of A, of B, the paired difference B − A and its bootstrap interval
        assert [str(c) for c in results.get_row_at(1)][:5] == ["env-tab-001", "3", "67%", "0%", "-67pp"]
        assert [str(c) for c in results.get_row_at(0)][2:5] == ["33%", "33%", "+0pp"]
        await pilot.press("m", "m", "m", "m")  # the rates in the engine's order: gold, silver, bronze, then valid
        assert screen.rate == "valid"  # (all valid in both)
        assert "valid rate" in static_text(screen.query_one("#eval-summary"))
        assert str(results.get_row_at(0)[4]) == "+0pp"
        await pilot.press("escape")  # back to the selected run's own results
        await pilot.pause()
        assert screen.versus is None and [c.label.plain for c in results.columns.values()][2] == "valid"


async def test_eval_compare_sets_the_best_constant_beside_it_once_cached(demo):
    """Not cached: the command that computes it; cached (as `sandmle eval constants` leaves it): the best constant
    strategy and the per-task oracle on the compared environments, in 80 columns."""
    from engine.envs.layout import EnvSpec
    from engine.eval.constants import cache_dir, options, write_results

    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        screen = app.screen
        summary = screen.query_one("#eval-summary")
        await pilot.press("c", "down", "c")  # A = SFT+GRPO (eval-demo), B = SFT (eval-sft)
        await wait_for(pilot, lambda: "not computed" in static_text(summary))
        assert "best constant: not computed · sandmle eval constants --run eval-sft" in static_text(summary)
        assert "overall -33pp" in static_text(summary)  # the comparison is there meanwhile
        # env-tab-000 rewards only the linear options, env-tab-001 only the boosted ones
        for env_id, medal in (("env-tab-000", "linear/"), ("env-tab-001", "boosted/")):
            write_results(EnvSpec.from_store(store, env_id), cache_dir(store.data_dir),
                          {c.key: {"score": 0.9, "valid": True, "medal": c.key.startswith(medal)} for c in options()})
        await pilot.press("m")  # the comparison again (another rate): the cache is read again
        await wait_for(pilot, lambda: "per-task oracle" in static_text(summary))
        text = static_text(summary)
        assert "best constant linear/words/rich/chars: medal 50% · per-task oracle 100%" in text
        assert "overall" in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80


async def test_rollouts_of_a_long_run_are_paged(demo):
    store, ids = demo
    for k in range(150):
        store.trajectories.add(Trajectory(id=f"traj-many-{k:03d}", run_id="grpo-demo", env_id="env-tab-001",
                                          policy="hf:tiny", scaffold="react", reward=0.1,
                                          created_at=f"2026-11-30T06:{k // 60:02d}:{k % 60:02d}.000+00:00"))
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TrajectoriesScreen" and app.screen.ready)
        table = app.screen.query_one("#traj-table", DataTable)
        info = app.screen.query_one("#traj-info")
        assert table.row_count == 100 and "1–100 of 152" in static_text(info)
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert table.row_count == 52 and "101–152 of 152" in static_text(info)
        assert [r.value for r in table.rows][-1] == "traj-many-149"


async def test_eval_without_a_leaderboard_is_na_and_failed_episodes_are_apart(demo):
    store, ids = demo
    store.envs.add({"id": "mlebench-no-board", "title": "no leaderboard", "status": "verified", "split": "real",
                    "modality": "tabular", "task_type": "regression", "metric": "rmse", "lower_is_better": True,
                    "id_column": "id", "target_columns": ["y"]})
    run = store.runs.create("eval", {"policy": "hf:tiny", "scaffold": "react"}, run_id="eval-mixed", name="mixed")
    base = {"policy": "hf:tiny", "scaffold": "react", "valid": True, "reward": 0.5, "has_leaderboard": True,
            "gold": False, "rank": None, "score": None, "error": None}
    store.runs.add_eval_results(run, [
        {**base, "env_id": "env-tab-000", "rng_seed": 0, "gold": True, "rank": 0.9, "score": 0.9},
        {**base, "env_id": "env-tab-000", "rng_seed": 1, "rank": 0.5, "score": 0.7},
        # a competition without a leaderboard: medals and the rank are n/a there, not 0
        {**base, "env_id": "mlebench-no-board", "rng_seed": 0, "has_leaderboard": False, "score": 0.3},
        {**base, "env_id": "mlebench-no-board", "rng_seed": 1, "has_leaderboard": False, "score": 0.4},
        # an episode that could not run (an unreachable endpoint) is no result
        {**base, "env_id": "env-tab-001", "rng_seed": 0, "valid": False, "error": "connection refused"},
    ])
    store.runs.finish(run, "done")
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "5")
        runs = app.screen.query_one("#eval-runs", DataTable)
        runs.move_cursor(row=runs.get_row_index("eval-mixed"))
        await pilot.pause()
        # seed 0: medal 1 (env-tab-000 only), seed 1: 0 → 50%; rank (0.9, 0.5) → 0.70
        assert [str(c) for c in runs.get_row_at(runs.cursor_row)][4:] == ["4", "50%", "100%", "0.70"]
        summary = static_text(app.screen.query_one("#eval-summary"))
        assert "4 episodes" in summary and "medal 50% ± 50%" in summary and "rank 0.700 ± 0.200" in summary
        assert "leave out 2 episode(s) without a leaderboard" in summary
        assert "1 episode(s) could not run" in summary
        results = app.screen.query_one("#eval-results", DataTable)
        assert [r.value for r in results.rows] == ["env-tab-000", "mlebench-no-board"]
        no_board = [str(c) for c in results.get_row_at(1)]
        assert no_board[1:5] == ["2", "100%±0%", "n/a", "n/a"] and no_board[5].startswith("0.35")


async def test_r_refreshes_and_every_table_fits_80_columns_with_long_ids(demo):
    store, ids = demo
    long_ids = ["tabular-binary-manufacturing-1a2b3c4d", "tabular-binary-manufacturing-9f8e7d6c"]
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "2")
        table = app.screen.query_one("#envs-table", DataTable)
        assert table.row_count == 3
        for env_id in long_ids:  # through the app's own connection: SQLite's data_version does not move
            store.envs.add({"id": env_id, "seed_id": "tabular-binary-manufacturing", "title": "long", "status":
                            "verified", "modality": "tabular", "task_type": "binary", "metric": "roc_auc",
                            "lower_is_better": False, "id_column": "id", "target_columns": ["y"]})
        store.sandbox.start({"id": "sbx-0123456789ab", "env_id": long_ids[1], "backend": "local",
                             "command": "python a_rather_long_script_name.py --with --many --options"})
        store.runs.create("grpo", {"model": "tiny", "steps": 500}, run_id="grpo-0123456789")
        await pilot.pause(1.0)
        assert table.row_count == 3  # nothing told the screen
        await pilot.press("r")
        await wait_for(pilot, lambda: table.row_count == 5)
        shown = {str(table.get_row_at(table.get_row_index(e))[0]) for e in long_ids}
        assert len(shown) == 2 and {s[-8:] for s in shown} == {"1a2b3c4d", "9f8e7d6c"}
        for key in "123456":
            await goto(pilot, key)
            await pilot.press("r")
            await pilot.pause()
            for t in app.screen.query(DataTable):
                assert t.row_count > 0 or key == "6", (key, t.id)
                assert t.virtual_size.width <= t.scrollable_content_region.width, (key, t.id, t.virtual_size)
        await goto(pilot, "3")
        sandbox = app.screen.query_one("#sandbox-table", DataTable)
        assert "sbx-0123456789ab" in [r.value for r in sandbox.rows]
        await goto(pilot, "4")
        assert "grpo-0123456789" in [r.value for r in app.screen.query_one("#runs-table", DataTable).rows]
