"""Pilot tests of the Environments, Sandbox, Training and Eval screens on realistic rows in a real store."""

from __future__ import annotations

import subprocess
import sys
import tarfile

import pytest
from textual.widgets import DataTable, Static, TabbedContent

from test_app import wait_for
from workbench.app import Workbench
from workbench.jobs import resolve_command
from workbench.demo import populate


@pytest.fixture
def demo(store):
    return store, populate(store)


def static_text(widget: Static) -> str:
    return str(widget.render())


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
        await pilot.press("2")
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
        assert board.row_count == 3
        assert "gold 0.9" in static_text(detail.query_one("#env-thresholds"))
        assert "ordering" in static_text(detail.query_one("#env-verification"))
        await pilot.press("x")
        if resolve_command(["envs", "export"]) is not None:  # an MLE-bench-style competition folder
            target = store.data_dir / "exports" / ids["envs"][0] / "config.yaml"
            await wait_for(pilot, target.exists, timeout=60)
        else:
            target = store.data_dir / "exports" / f"{ids['envs'][0]}.tar.gz"
            await wait_for(pilot, target.exists)
            await pilot.pause(0.2)
            with tarfile.open(target) as tar:
                assert f"{ids['envs'][0]}/public/train.csv" in tar.getnames()
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "EnvironmentsScreen"


async def test_environments_page_through_many(seeded_store):
    store = seeded_store
    from workbench.demo import add_envs

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
        await pilot.press("3")
        await wait_for(pilot, lambda: app.current_mode == "sandbox" and app.screen.ready)
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
        await pilot.press("l", "home")  # to the top of the log: a search starts from the view
        await pilot.press("slash", *"epoch 3", "enter")
        await wait_for(pilot, lambda: log.current_line == 5)  # "epoch 3 …" is the 6th line
        await pilot.press("n")
        await wait_for(pilot, lambda: log.current_line == 32)  # next: "epoch 30 …"


async def test_log_view_opens_a_big_log_lazily(store, tmp_path):
    from workbench.widgets.log_view import LogView

    big = tmp_path / "big.log"
    with open(big, "w") as f:
        for block in range(20):
            f.write("".join(f"line {block * 10000 + i} of a long training log\n" for i in range(10000)))
    store.sandbox.start({"id": "sbx-big", "backend": "local", "command": "python big.py", "log_path": str(big)})
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_for(pilot, lambda: app.current_mode == "sandbox" and app.screen.ready)
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
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_mode == "training" and app.screen.ready)
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
        await pilot.press("m")
        assert curves.names() == ["loss"]
        # the finished demo run: its rollouts, one turn by turn, then two of a group side by side
        await pilot.press("down", "t")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "TrajectoriesScreen" and app.screen.ready)
        screen = app.screen
        assert screen.query_one("#traj-table", DataTable).row_count == 2
        left = screen.query_one("#traj-left")
        assert left.trajectory["id"] == "traj-0" and len(left.trajectory["turns"]) == 3
        await pilot.press("c")
        await pilot.pause()
        right = screen.query_one("#traj-right")
        assert not right.has_class("hidden") and right.trajectory["id"] == "traj-1"
        assert "group grp-1" in static_text(screen.query_one("#traj-info"))


async def test_eval_screen_medal_rate_and_human_rank_with_sem(demo):
    store, ids = demo
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await wait_for(pilot, lambda: app.current_mode == "eval" and app.screen.ready)
        summary = static_text(app.screen.query_one("#eval-summary"))
        # overall: per seed, the mean over environments; then mean ± SEM over seeds (as `sandmle eval`)
        assert "6 episodes" in summary and "medal rate 50% ± 0%" in summary and "HumanRank 0.600 ± 0.058" in summary
        results = app.screen.query_one("#eval-results", DataTable)
        assert results.row_count == 2
        assert results.get_row_at(0)[3] == "67% ± 33%"


def test_mean_sem():
    from workbench.screens.eval import mean_sem

    assert mean_sem([]) == (None, None)
    assert mean_sem([1.0]) == (1.0, 0.0)
    m, s = mean_sem([0.0, 1.0, 1.0, 0.0])
    assert m == 0.5 and s == pytest.approx(0.288675, rel=1e-4)
