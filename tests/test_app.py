"""The workbench opens on the store and lists the seeds (headless, through Textual's run_test)."""

from __future__ import annotations


async def test_app_lists_and_filters_seeds(seeded_store):
    from textual.widgets import DataTable

    from workbench.app import Workbench

    app = Workbench(store=seeded_store)
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one("#seeds-table", DataTable)
        assert table.row_count == seeded_store.seeds.count() >= 10
        await pilot.press("slash", *"whale")
        await pilot.pause()
        assert table.row_count == 1
        await pilot.press("escape", "e")
        await pilot.pause()
        assert seeded_store.seeds.get("whale-calls")["enabled"] is False
