"""A lazy log viewer: indexes line offsets (numpy, in a thread), reads only the lines on screen, live-tails the
file through watchdog, and searches in a thread — so a 1,000,000-line log opens in a fraction of a second and
the UI never blocks."""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path

import numpy as np
from rich.segment import Segment
from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..messages import LogLoaded, SearchDone

CHUNK = 8 << 20
_EMPTY = np.zeros(0, dtype=np.int64)


def newline_starts(fh, start: int, end: int) -> np.ndarray:
    """Offsets just after each b'\\n' in ``fh[start:end]`` (the starts of the following lines)."""
    parts = []
    pos = start
    while pos < end:
        buf = os.pread(fh.fileno(), min(CHUNK, end - pos), pos)
        if not buf:
            break
        arr = np.frombuffer(buf, dtype=np.uint8)
        parts.append(np.flatnonzero(arr == 10).astype(np.int64) + (pos + 1))
        pos += len(buf)
    return np.concatenate(parts) if parts else _EMPTY


class _TailHandler:
    """watchdog handler that calls ``on_change`` when the watched file is modified, created or replaced."""

    def __init__(self, path: Path, on_change):
        from watchdog.events import FileSystemEventHandler  # watchdog starts only for a log that is followed

        target = str(path)

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event):  # noqa: D401 - watchdog callback
                if getattr(event, "src_path", None) == target or getattr(event, "dest_path", None) == target:
                    on_change()

        self.handler = Handler()


class LogView(ScrollView, can_focus=True):
    """Shows one log file; ``open(path)`` switches file. Follows the end while ``follow`` is on."""

    DEFAULT_CSS = """
    LogView { background: $surface; }
    LogView > .logview--match { background: $accent 40%; }
    LogView > .logview--current { background: $primary 30%; }
    LogView > .logview--lineno { color: $text-muted; }
    """
    COMPONENT_CLASSES = {"logview--match", "logview--current", "logview--lineno"}
    BINDINGS = [
        Binding("f", "toggle_follow", "Follow", id="log.follow", tooltip="Follow the end of a growing log"),
        Binding("n", "search_next", "Next match", id="log.next"),
        Binding("N", "search_prev", "Prev match", show=False, id="log.prev"),
    ]

    follow: reactive[bool] = reactive(True)
    search_text: reactive[str] = reactive("", repaint=True)
    current_line: reactive[int | None] = reactive(None, repaint=True)

    def __init__(self, path: str | Path | None = None, *, poll_s: float = 1.0, **kwargs):
        super().__init__(**kwargs)
        self.path: Path | None = Path(path) if path else None
        self.poll_s = poll_s
        self._lv_starts: np.ndarray = _EMPTY
        self._lv_scanned = 0
        self._lv_cache: dict[int, str] = {}
        self._lv_observer = None
        self._lv_fh = None
        self._lv_max_width = 0
        self.loaded = False
        self.message_text = "no log"

    # ------------------------------------------------------------------ public
    @property
    def line_count(self) -> int:
        n = len(self._lv_starts)
        if n and int(self._lv_starts[-1]) >= self._lv_scanned:
            n -= 1  # the file ends with a newline: no empty last line
        return n

    def line(self, index: int) -> str:
        """Text of line ``index`` (0-based), read from disk on demand."""
        cached = self._lv_cache.get(index)
        if cached is not None:
            return cached
        if self._lv_fh is None or index < 0 or index >= self.line_count:
            return ""
        start = int(self._lv_starts[index])
        end = int(self._lv_starts[index + 1]) - 1 if index + 1 < len(self._lv_starts) else self._lv_scanned
        data = os.pread(self._lv_fh.fileno(), max(0, min(end - start, 1 << 16)), start)
        text = data.decode("utf-8", "replace").rstrip("\r\n").replace("\t", "    ")
        if len(self._lv_cache) > 4096:
            self._lv_cache.clear()
        self._lv_cache[index] = text
        return text

    def open(self, path: str | Path | None) -> None:
        """Show ``path`` (None: nothing). Indexing runs in a thread; the view paints when it is done."""
        self._stop_watching()
        self.path = Path(path) if path else None
        self._reset()
        self.current_line = None
        if self.path is None:
            self.message_text = "no log"
            self.loaded = True
            self.refresh()
            return
        if not self.path.is_file():
            self.message_text = f"log file not found: {self.path}"
            self.loaded = True
            self.refresh()
            return
        self.message_text = "indexing…"
        self._index(self.path)

    def search(self, query: str, *, forward: bool = True) -> None:
        """Find the next (or previous) line containing ``query`` (case-insensitive), from the current line."""
        self.search_text = query
        if not query or self._lv_fh is None:
            return
        origin = self.current_line if self.current_line is not None else (
            self.scroll_offset.y if not forward else max(0, self.scroll_offset.y - 1))
        self._search(query, origin, forward)

    # ------------------------------------------------------------------ indexing & tail
    def _reset(self) -> None:
        if self._lv_fh is not None:
            self._lv_fh.close()
            self._lv_fh = None
        self._lv_starts, self._lv_scanned, self._lv_max_width = _EMPTY, 0, 0
        self._lv_cache.clear()
        self.loaded = False
        self.virtual_size = Size(0, 0)

    @work(thread=True, exclusive=True, group="log-index")
    def _index(self, path: Path) -> None:
        fh = open(path, "rb")
        size = os.fstat(fh.fileno()).st_size
        starts = np.concatenate([np.zeros(1, dtype=np.int64), newline_starts(fh, 0, size)])
        self.app.call_from_thread(self._indexed, path, fh, starts, size)

    def _indexed(self, path: Path, fh, starts: np.ndarray, size: int) -> None:
        if path != self.path:
            fh.close()
            return
        self._lv_fh, self._lv_starts, self._lv_scanned = fh, starts, size
        self.loaded = True
        self.message_text = ""
        self._measure_width()
        self._update_size()
        if self.follow:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)
        self.refresh()
        self._start_watching()
        self.post_message(LogLoaded(str(path), self.line_count))

    def _measure_width(self) -> None:
        n = self.line_count
        for i in list(range(min(n, 200))) + list(range(max(0, n - 200), n)):
            self._lv_max_width = max(self._lv_max_width, len(self.line(i)))

    def _gutter(self) -> int:
        return len(str(max(1, self.line_count))) + 1

    def _update_size(self) -> None:
        self.virtual_size = Size(self._lv_max_width + self._gutter() + 1, self.line_count)

    def _start_watching(self) -> None:
        if self.path is None:
            return
        try:
            from watchdog.observers import Observer  # watchdog starts only for a log that is followed

            observer = Observer()
            observer.schedule(_TailHandler(self.path, self._changed_from_thread).handler,
                              str(self.path.parent), recursive=False)
            observer.daemon = True
            observer.start()
            self._lv_observer = observer
        except (OSError, RuntimeError):  # inotify limits: the poll timer still tails the file
            self._lv_observer = None
        self._lv_poll_timer = self.set_interval(self.poll_s, self.grow)

    def _stop_watching(self) -> None:
        observer, self._lv_observer = self._lv_observer, None
        if observer is not None:
            observer.stop()
        timer = getattr(self, "_lv_poll_timer", None)
        if timer is not None:
            timer.stop()
            self._lv_poll_timer = None

    def _changed_from_thread(self) -> None:
        try:
            self.app.call_from_thread(self.grow)
        except RuntimeError:  # the app is shutting down
            pass

    def grow(self) -> None:
        """Index what was appended since the last look (re-index if the file shrank)."""
        if self._lv_fh is None or self.path is None:
            return
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return
        if size == self._lv_scanned:
            return
        if size < self._lv_scanned:
            self.open(self.path)
            return
        at_end = self.follow or self.is_vertical_scroll_end
        last = self.line_count - 1
        new = newline_starts(self._lv_fh, self._lv_scanned, size)
        if len(new):
            self._lv_starts = np.concatenate([self._lv_starts, new])
        self._lv_scanned = size
        self._lv_cache.pop(last, None)  # the old last line may have been partial
        for i in range(max(0, last), self.line_count):
            self._lv_max_width = max(self._lv_max_width, len(self.line(i)))
        self._update_size()
        if at_end and self.follow:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)
        self.refresh()

    # ------------------------------------------------------------------ search
    @work(thread=True, exclusive=True, group="log-search")
    def _search(self, query: str, origin: int, forward: bool) -> None:
        pattern = re.compile(re.escape(query.encode("utf-8")), re.IGNORECASE)
        n = self.line_count
        if n == 0:
            self.app.call_from_thread(self._found, query, None)
            return
        starts, end = self._lv_starts, self._lv_scanned
        with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            def line_of(pos: int) -> int:
                return int(np.searchsorted(starts, pos, side="right")) - 1

            if forward:
                begin = int(starts[origin + 1]) if origin + 1 < n else end
                m = pattern.search(mm, begin, end) or pattern.search(mm, 0, begin)
                hit = line_of(m.start()) if m else None
            else:
                stop = int(starts[origin]) if 0 <= origin < n else end
                hit = None
                for lo, hi in ((0, stop), (stop, end)):
                    last = None
                    # scan backwards in windows so a match near the origin is found fast
                    window = 4 << 20
                    pos = hi
                    while pos > lo and last is None:
                        w0 = max(lo, pos - window)
                        for m in pattern.finditer(mm, w0, pos):
                            last = m.start()
                        pos = w0
                    if last is not None:
                        hit = line_of(last)
                        break
        self.app.call_from_thread(self._found, query, hit)

    def _found(self, query: str, line: int | None) -> None:
        if line is not None:
            self.follow = False
            self.current_line = line
            self.scroll_to(y=max(0, line - self.scrollable_content_region.height // 2), animate=False,
                           immediate=True)
        else:
            self.notify(f"no match for {query!r}", severity="warning", timeout=3)
        self.post_message(SearchDone(query, line))

    def action_search_next(self) -> None:
        self.search(self.search_text, forward=True)

    def action_search_prev(self) -> None:
        self.search(self.search_text, forward=False)

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.current_line = None
            self.scroll_end(animate=False)
        self.notify("following the end of the log" if self.follow else "follow off", timeout=2)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if new < old and self.follow and self.loaded and self._lv_fh is not None:
            self.follow = False  # the user scrolled up: stop jumping to the end

    # ------------------------------------------------------------------ rendering
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if self._lv_fh is None:
            if y == 0:
                return Strip([Segment(self.message_text.ljust(width)[:width], base)])
            return Strip.blank(width, base)
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        if index >= self.line_count:
            return Strip.blank(width, base)
        gutter = self._gutter()
        text = Text(str(index + 1).rjust(gutter - 1) + " ",
                    style=self.get_component_rich_style("logview--lineno", partial=True))
        body = Text(self.line(index))
        if self.search_text:
            body.highlight_regex(re.compile(re.escape(self.search_text), re.IGNORECASE),
                                 style=self.get_component_rich_style("logview--match", partial=True))
        if index == self.current_line:
            body.stylize(self.get_component_rich_style("logview--current", partial=True))
        text.append_text(body)
        segments = [Segment(s.text, base + s.style if s.style else base) for s in text.render(self.app.console)]
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, base)

    def on_unmount(self) -> None:
        self._stop_watching()
        if self._lv_fh is not None:
            self._lv_fh.close()
            self._lv_fh = None
