"""Signal handling lives in one module, core/signals.py: no other module of the bundle installs a handler,
ignores a signal or masks one, so every command stops the same way (128 + the signal, its clean-up not cut
short) and a fix to how signals are taken is made once. Read from the source itself (every call, whatever
it is imported as), so a new module that takes signals its own way fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pdrepro

PACKAGE = Path(pdrepro.__file__).resolve().parent
THE_MODULE = PACKAGE / "core" / "signals.py"
# What installs, ignores or masks a signal (sending one, os.kill and os.killpg, is everyone's right).
TAKING = {"signal", "pthread_sigmask", "siginterrupt", "set_wakeup_fd", "sigwait", "sigwaitinfo", "sigtimedwait"}


def _takers(path: Path, root: Path = PACKAGE) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    aliases = {"signal"}  # the names the signal module goes by in this file
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "signal"}
        elif isinstance(node, ast.ImportFrom) and node.module == "signal":
            found += [f"{path.relative_to(root)}:{node.lineno}: from signal import {a.name}" for a in node.names
                      if a.name in TAKING or a.name == "*"]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TAKING
                and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.func.value.id}.{node.func.attr}()")
    return found


def test_no_module_but_core_signals_takes_signals():
    takers = [t for path in sorted(PACKAGE.rglob("*.py")) if path != THE_MODULE for t in _takers(path)]
    assert takers == [], "signals are taken in core/signals.py only; use its ways instead: " + "; ".join(takers)


def test_the_check_sees_a_handler_however_it_is_written(tmp_path):
    # The scan must catch the forms a module would use, or the test above passes on nothing.
    cases = {"a.py": "import signal\nsignal.signal(signal.SIGTERM, print)\n",
             "b.py": "import signal as s\ns.pthread_sigmask(s.SIG_BLOCK, [])\n",
             "c.py": "from signal import signal\n",
             "d.py": "import os, signal\nos.kill(1, signal.SIGTERM)\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
    hits = {name: bool(_takers(tmp_path / name, tmp_path)) for name in cases}
    assert hits == {"a.py": True, "b.py": True, "c.py": True, "d.py": False}
    assert _takers(THE_MODULE), "core/signals.py itself takes signals: the scan finds its calls"

