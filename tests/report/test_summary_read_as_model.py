"""The report, the verdicts and publish read a summary only as its model (rundir/summarymodel.py).

A string-keyed lookup into summary data (``summary["rows"]``, ``row.get("bandwidth_GB_s")``) or a field
fetched by name (``getattr(summary, "rows")``) reads a figure the model does not declare, which a summary
of another shape turns into a traceback deep in a reader. This walks the modules' syntax trees and names
every such lookup, so each fix of the summary's shape lands once, in the model.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pdrepro"
FOLDERS = ("report", "verdicts", "publish")


def _modules() -> list[Path]:
    # The analysis's verdict source makes the summary every verdict is drawn from: it reads it as a model too.
    return sorted([*(p for folder in FOLDERS for p in (PACKAGE / folder).rglob("*.py")),
                   PACKAGE / "analysis" / "verdictsource.py"])


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def lookups_by_name(source: str) -> list[str]:
    """Each string-keyed subscript, ``.get("...")`` and getattr/__getitem__ by name in ``source``, as 'line: code'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_text(node.slice):
            found.append(node)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("get", "__getitem__", "setdefault", "pop") \
                    and node.args and _is_text(node.args[0]):
                found.append(node)
            elif isinstance(func, ast.Name) and func.id in ("getattr", "hasattr") and len(node.args) > 1:
                found.append(node)
    return [f"{n.lineno}: {ast.unparse(n)}" for n in found]


def test_the_walk_finds_each_kind_of_lookup():
    # What the guard must catch, so a test that finds nothing is not a walk that sees nothing.
    source = ('a = summary["rows"]\nb = row.get("bandwidth_GB_s")\nc = getattr(summary, "rows")\n'
              'd = s.__getitem__("x")\ne = summary[f"k{1}"]\nok = rows[L]\nfine = summary.rows\n')
    assert [line.split(":")[0] for line in lookups_by_name(source)] == ["1", "2", "3", "4", "5"]


def test_there_are_modules_to_walk():
    names = {p.name for p in _modules()}
    assert {"markdown.py", "plots.py", "provenance.py", "gates.py", "verdictsource.py", "results.py"} <= names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_lookup_by_name_into_summary_data(path):
    assert lookups_by_name(path.read_text()) == [], f"{path.relative_to(PACKAGE)} reads summary data by name"
