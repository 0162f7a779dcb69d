"""The smoke's report table, plots and console read a summary row only through the summary model's fields
(smoke/ways.py picks each way's figures): a lookup by a row field's name (``r["nixl_ms_min"]``,
``r.get("mooncake_stall")``) would read a figure past the model, so a row of the wrong shape would surface as a
traceback inside a reader rather than one line where the summary is loaded. The smoke block's own findings
(``summary.smoke``) are not rows and are not walked for."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pdrepro.rundir.summarymodel import SmokeRow as Row

SMOKE = Path(__file__).resolve().parents[2] / "src" / "pdrepro" / "smoke"
READERS = ("section.py", "plot.py", "console.py", "ways.py")


def row_lookups(source: str) -> list[str]:
    """Each string-keyed subscript or .get() whose key is a field of Row (or an f-string that may build one)."""
    fields = set(Row.model_fields)
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript):
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
                and node.args:
            key = node.args[0]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            found.append(node)
            continue
        if isinstance(key, ast.JoinedStr) or (isinstance(key, ast.Constant) and key.value in fields):
            found.append(node)
    return [f"{n.lineno}: {ast.unparse(n)}" for n in found]


def test_the_walk_finds_row_lookups():
    source = ('a = r["nixl_ms_min"]\nb = r.get("mooncake_stall")\nc = r[f"{p}_min"]\nd = getattr(r, "x")\n'
              'ok = s["ratio_target"]\nfine = r.nixl_ms_min\n')
    assert [line.split(":")[0] for line in row_lookups(source)] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("name", READERS)
def test_no_row_figure_is_read_by_name(name):
    assert row_lookups((SMOKE / name).read_text()) == [], f"smoke/{name} reads a row figure by name"
