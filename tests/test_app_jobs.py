"""Jobs started from the workbench are real `sandmle` child processes recorded in the store: they show in the
job panel with their output, keep running across screens, can be stopped, and quitting asks about them."""

from __future__ import annotations

import pytest
from textual.widgets import Button, DataTable, Label, Select

from test_app import goto, wait_for
from workbench.app import Workbench
from workbench.jobs import LAUNCHER, build_argv, resolve_command


def test_every_command_the_workbench_launches_is_in_this_build():
    """The forms and keys start these commands; one missing is a broken build (the tests fail, never skip)."""
    from workbench.screens.launch_form import COMMANDS

    for path in [*COMMANDS.values(), ["synth"], ["runs", "stop"], ["runs", "resume"], ["bench"]]:
        assert resolve_command(list(path)) is not None, f"sandmle {' '.join(path)} is not in this build"


def test_build_argv_uses_only_the_options_a_command_accepts():
    argv, ignored = build_argv(["seeds", "list"], {"json": True, "modality": "text", "banana": 3})
    assert argv == ["seeds", "list", "--json", "--modality", "text"]
    assert ignored == ["banana"]
    assert build_argv(["no-such-command"], {"x": 1}) == ([], ["x"])
    assert resolve_command(["seeds", "nope"]) is None


async def test_a_job_runs_in_the_background_and_shows_its_output(seeded_store):
    app = Workbench(store=seeded_store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        job = app.launch_job("bench", ["seeds", "list", "--json"], "list seeds")
        run = seeded_store.runs.get(job.run_id)
        assert run["status"] == "running" and run["config"]["launcher"] == LAUNCHER and run["pid"]
        await pilot.press("2")  # the job keeps going while we look elsewhere
        await wait_for(pilot, lambda: seeded_store.runs.get(job.run_id)["status"] == "done", timeout=60)
        assert '"whale-calls"' in job.log_path.read_text()
        await goto(pilot, "6")
        table = app.screen.query_one("#jobs-table", DataTable)
        assert table.row_count == 1 and "done" in str(table.get_row_at(0)[2])
        log = app.screen.query_one("#job-log")
        await wait_for(pilot, lambda: log.loaded and log.line_count > 10)
        assert log.line(0) == "$ sandmle seeds list --json"


async def test_a_failing_job_is_marked_failed_with_its_error(store):
    app = Workbench(store=store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        job = app.launch_job("bench", ["seeds", "show", "no-such-seed"], "show a missing seed")
        await wait_for(pilot, lambda: store.runs.get(job.run_id)["status"] == "failed", timeout=60)
        assert "no seed with id 'no-such-seed'" in store.runs.get(job.run_id)["error"]


async def test_quit_asks_and_can_stop_a_running_job(store, tmp_path):
    app = Workbench(store=store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        # a long job: the TUI benchmark builds a big store in a child process
        job = app.launch_job("bench", ["bench", "tui", "--quick", "--out", str(tmp_path)], "tui benchmark")
        await pilot.press("q")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmQuitScreen")
        assert app.is_running
        labels = " ".join(str(l.render()) for l in app.screen.query(Label))
        assert "1 job(s) still running" in labels and "tui benchmark" in labels
        await pilot.press("c")  # cancel: still running, nothing stopped
        await wait_for(pilot, lambda: type(app.screen).__name__ != "ConfirmQuitScreen")
        assert app.is_running and job.running
        await pilot.press("q")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmQuitScreen")
        await pilot.press("s")  # stop & quit
        # stopping waits for the child (SIGINT, then SIGTERM, then SIGKILL): give a loaded machine time
        await wait_for(pilot, lambda: not job.running or not app.is_running, timeout=30)
    assert store.runs.get(job.run_id)["status"] in ("stopped", "failed")
    assert not job.running


@pytest.mark.slow
async def test_synthesize_from_a_seed_and_see_its_environments_appear(seeded_store):
    app = Workbench(store=seeded_store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("l")
        await pilot.pause()
        form = app.screen
        assert type(form).__name__ == "SynthFormScreen"
        assert form.query_one("#synth-backend", Select).value == "grounded"  # the data extra is installed
        assert not form.query("#synth-missing") and not form.query_one("#start", Button).disabled
        form.query_one("#synth-count").value = "2"
        await pilot.press("ctrl+s")
        await pilot.pause()
        job = next(iter(app.jobs.jobs.values()))
        assert job.argv == ["synth", "--seed", "author-style", "--count", "2", "--backend", "grounded", "--json"]
        await pilot.press("2")  # watch the Environments screen fill while the job runs
        await wait_for(pilot, lambda: not job.running, timeout=300)
        assert seeded_store.runs.get(job.run_id)["status"] == "done", job.log_path.read_text()[-2000:]
        made = seeded_store.envs.count(seed_id="author-style")
        assert made >= 1
        # one job, one run: the synthesis run is the job's row
        assert [r["id"] for r in seeded_store.runs.list(kind="synthesis")] == [job.run_id]
        table = app.screen.query_one("#envs-table", DataTable)
        await wait_for(pilot, lambda: table.row_count == made)
        await goto(pilot, "6")
        progress = str(app.screen.query_one("#jobs-table", DataTable).get_row_at(0)[4])
        assert progress.startswith(f"{made}/2 envs")


async def test_launch_form_builds_the_real_training_command(seeded_store):
    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await wait_for(pilot, lambda: app.current_mode == "training")
        await pilot.press("l")
        await pilot.pause()
        form = app.screen
        assert type(form).__name__ == "LaunchFormScreen"
        text = str(form.query_one("#launch-command", Label).render())
        assert "sandmle train grpo" in text and "--model tiny" in text and "--group-size 4" in text
        assert "--env-split train" in text and "--steps 10" in text
        form.query_one("#launch-envs").value = "env-a, env-b"
        await pilot.pause()
        text = str(form.query_one("#launch-command", Label).render())
        assert "--env-ids env-a --env-ids env-b" in text
        form.query_one("#launch-kind", Select).value = "eval"
        await pilot.pause()
        text = str(form.query_one("#launch-command", Label).render())
        assert text.startswith("sandmle eval") or "sandmle eval " in text, text
        assert not form.query_one("#start", Button).disabled


async def test_launch_form_prefills_from_the_selected_run_and_remembers_the_last_launch(store):
    from demo_store import populate
    from workbench.screens.launch_form import load_last, save_last

    populate(store)
    app = Workbench(store=store)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        await pilot.press("l")  # the selected run is grpo-demo
        await wait_for(pilot, lambda: type(app.screen).__name__ == "LaunchFormScreen")
        form = app.screen
        assert [form.query_one(f"#launch-{f}").value for f in ("model", "group_size", "steps", "envs")] == \
            ["tiny", "2", "12", "train"]
        await pilot.press("escape")
        save_last(store.data_dir, "sft", {"model": "tiny", "extra": "--epochs 1", "steps": "3"})
        assert load_last(store.data_dir)["extra"] == "--epochs 1"
        await pilot.press("l")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "LaunchFormScreen")
        form = app.screen
        assert form.query_one("#launch-kind", Select).value == "sft"
        assert form.query_one("#launch-extra").value == "--epochs 1"
        assert form.query_one("#launch-steps").value == "12"  # the selected run's own value wins


@pytest.mark.slow
async def test_launch_a_tiny_grpo_run_and_see_its_first_metric_point(store):
    from demo_store import populate

    populate(store)
    app = Workbench(store=store, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await goto(pilot, "4")
        await pilot.press("l")
        await pilot.pause()
        form = app.screen
        form.query_one("#launch-steps").value = "1"
        form.query_one("#launch-group_size").value = "2"
        form.query_one("#launch-extra").value = "--envs-per-step 1 --max-turns 2 --max-new-tokens 32"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        job = next(iter(app.jobs.jobs.values()))
        assert job.argv[:2] == ["train", "grpo"] and "--steps" in job.argv and "--max-turns" in job.argv

        await wait_for(pilot, lambda: store.runs.metric_points(job.run_id) > 0, timeout=240)
        await wait_for(pilot, lambda: not job.running, timeout=120)
        row = store.runs.get(job.run_id)
        assert row["status"] == "done", job.log_path.read_text()[-2000:]
        # one job is one run: the trainer ran under the job's id, with its config and a run folder
        assert [r["id"] for r in store.runs.list(kind="grpo") if r["id"] != "grpo-demo"] == [job.run_id]
        assert row["config"]["steps"] == 1 and row["config"]["launcher"] == "workbench"
        assert row["dir"].endswith(f"runs/{job.run_id}") and store.runs.latest_checkpoint(job.run_id)
        # the run is on the Training screen, with its reward point on the curves
        table = app.screen.query_one("#runs-table", DataTable)
        await wait_for(pilot, lambda: job.run_id in [r.value for r in table.rows])
        table.move_cursor(row=[r.value for r in table.rows].index(job.run_id))
        curves = app.screen.query_one("#run-curves")
        await wait_for(pilot, lambda: len(curves.series.get("reward_mean", [])) == 1)
        assert "KL" in curves.views() and "step time" in curves.views()  # every metric the run logs
        # the job panel shows the same run's progress
        await goto(pilot, "6")
        jobs_table = app.screen.query_one("#jobs-table", DataTable)
        assert [r.value for r in jobs_table.rows] == [job.run_id]
        assert str(jobs_table.get_row_at(0)[4]).startswith("step 1/1 · reward")


@pytest.mark.slow
async def test_a_training_job_stopped_from_the_workbench_shows_as_stopped(store):
    from demo_store import populate

    populate(store)
    app = Workbench(store=store, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        job = app.launch_job("grpo", ["train", "grpo", "--model", "tiny", "--steps", "40", "--group-size", "2",
                                      "--envs-per-step", "1", "--max-turns", "2", "--max-new-tokens", "16",
                                      "--save-every", "1"], "grpo to stop")
        await pilot.press("4")
        await wait_for(pilot, lambda: store.runs.metric_points(job.run_id) > 0, timeout=240)
        table = app.screen.query_one("#runs-table", DataTable)
        await wait_for(pilot, lambda: job.run_id in [r.value for r in table.rows])
        table.move_cursor(row=[r.value for r in table.rows].index(job.run_id))
        await pilot.press("s")  # asks first
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_for(pilot, lambda: not job.running, timeout=120)
        row = store.runs.get(job.run_id)
        assert row["status"] == "stopped" and job.status == "stopped", (row["error"], job.log_path.read_text()[-2000:])
        assert 0 < store.runs.last_step(job.run_id) < 40 and store.runs.latest_checkpoint(job.run_id)
        await wait_for(pilot, lambda: "stopped" in str(table.get_row_at(table.get_row_index(job.run_id))[2]))


async def test_stop_and_resume_a_training_run_from_the_training_screen(seeded_store):
    import subprocess
    import sys

    store = seeded_store
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        run_id = store.runs.create("grpo", {"model": "tiny", "steps": 5}, run_id="grpo-to-stop")
        store.runs.update(run_id, pid=worker.pid)
        app = Workbench(store=store, poll_s=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await goto(pilot, "4")
            await pilot.press("s")
            await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
            await pilot.press("n")  # asked first: no stops nothing
            await pilot.pause()
            assert store.runs.get(run_id)["status"] == "running"
            await pilot.press("s", "y")
            await wait_for(pilot, lambda: store.runs.get(run_id)["status"] == "stopped", timeout=60)
            await wait_for(pilot, lambda: worker.poll() is not None, timeout=30)  # the trainer got SIGTERM
            await wait_for(pilot, lambda: "stopped" in str(app.screen.query_one("#runs-table", DataTable)
                                                          .get_row_at(0)[2]))
            await pilot.press("R")
            await pilot.pause()
            job = next(iter(app.jobs.jobs.values()))
            assert job.argv == ["runs", "resume", "--json", run_id] and job.run_id == run_id  # the same run
            await wait_for(pilot, lambda: not job.running, timeout=120)
    finally:
        worker.kill()
        worker.wait()


async def test_a_job_left_running_reports_its_end_to_the_next_session(seeded_store, tmp_path):
    app = Workbench(store=seeded_store, poll_s=0.1)
    async with app.run_test(size=(80, 24)) as pilot:
        job = app.launch_job("bench", ["bench", "tui", "--quick", "--out", str(tmp_path)], "tui benchmark")
        await pilot.press("q")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmQuitScreen")
        await pilot.press("l")  # leave it running
        await pilot.pause()
    assert seeded_store.runs.get(job.run_id)["status"] == "running"
    again = Workbench(store=seeded_store, poll_s=0.1)
    async with again.run_test(size=(80, 24)) as pilot:
        adopted = again.jobs.jobs[job.run_id]
        assert adopted.proc is None and adopted.running
        await goto(pilot, "6")
        job.proc.wait(timeout=300)  # the child of the first session
        await wait_for(pilot, lambda: not adopted.running, timeout=30)
        assert seeded_store.runs.get(job.run_id)["status"] == "done"
        assert adopted.status == "done"


@pytest.mark.slow
async def test_an_eval_job_is_one_eval_run_on_the_eval_screen(store):
    from demo_store import populate

    populate(store)
    before = {r["id"] for r in store.runs.list(kind="eval")}
    app = Workbench(store=store, poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        job = app.launch_job("eval", ["eval", "--policy", "scripted", "--scaffold", "oneshot", "--envs", "env-tab-000",
                                      "--name", "scripted oneshot", "--json"], "eval scripted")
        await wait_for(pilot, lambda: not job.running, timeout=240)
        row = store.runs.get(job.run_id)
        assert row["status"] == "done", job.log_path.read_text()[-2000:]
        assert {r["id"] for r in store.runs.list(kind="eval")} - before == {job.run_id}  # no second run
        assert row["name"] == "scripted oneshot" and row["config"]["scaffold"] == "oneshot"
        assert len(store.runs.eval_results(job.run_id)) == 1
        await goto(pilot, "5")
        runs = app.screen.query_one("#eval-runs", DataTable)
        assert str(runs.get_row_at(runs.get_row_index(job.run_id))[0]) == "scripted oneshot"
