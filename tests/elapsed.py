"""`make test`'s progress line: pytest's count (`-o console_output_style=count`, "[ 312/1014]") with the wall
time since the run started appended ("[ 312/1014, 1m42s]"), so a slow suite shows both how far it is and how
long it has taken. Loaded by tests/conftest.py; it changes nothing else.

pytest has no public hook for the progress text, so this wraps the terminal reporter's own method on the one
process that prints (the xdist controller, or a plain run); where that method is missing (another pytest), the
count alone is shown and tests/test_make_test.py, which reads the output, fails and says so."""

from __future__ import annotations

import time

import pytest

SUFFIX_WIDTH = len(", 99m59s")


def elapsed(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 60}m{whole % 60:02d}s"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.getini("console_output_style") != "count":
        return  # a worker prints nothing; other styles are left as pytest prints them
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    count = getattr(reporter, "_get_progress_information_message", None)
    if count is None or not isinstance(getattr(reporter, "_screen_width", None), int):
        return
    start = time.monotonic()

    def count_and_time() -> str:
        text = count()
        return f"{text[:-1]}, {elapsed(time.monotonic() - start)}]" if text.endswith("]") else text

    reporter._get_progress_information_message = count_and_time  # type: ignore[union-attr]
    # The row of dots ends where pytest thinks the count starts: leave room for the time as well.
    reporter._screen_width -= SUFFIX_WIDTH  # type: ignore[union-attr]
