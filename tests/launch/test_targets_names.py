"""The launch targets ask the registries: no serving engine or transfer backend is named in their code
(strings or identifiers; docstrings and comments may speak of them, and the templates hold fixed text).
The smoke's sbatch job (slurm_smoke.py) keeps its names, as the smoke does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pdrepro import backends, engines

TARGETS = Path(__file__).resolve().parents[2] / "src" / "pdrepro" / "launch" / "targets"
KEPT = {"slurm_smoke.py"}
NAMES = sorted({*engines.names(), *backends.names(), "ucx"})


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def words(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string constant (docstrings aside) and identifier in SOURCE."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node.lineno, node.name))
        elif isinstance(node, ast.arg):
            out.append((node.lineno, node.arg))
        elif isinstance(node, ast.alias):
            out.append((node.lineno, node.asname or node.name))
    return out


def named(source: str) -> list[str]:
    return [f"line {line}: {text!r}" for line, text in words(source) for name in NAMES if name in text.lower()]


MODULES = sorted(p for p in TARGETS.glob("*.py") if p.name not in KEPT)


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_no_engine_or_backend_is_named(path):
    assert not named(path.read_text()), f"{path.name} names an engine or a backend; ask the registries"


def test_the_check_finds_a_name():
    # Each kind of word the check reads, holding a name, is caught; a docstring or a comment is not.
    assert MODULES and NAMES
    bad = 'x = "--disaggregation-transfer-backend nixl"\ndef use_mooncake(sglang_port): return Mooncake.ucx_tls\n'
    assert len(named(bad)) == 5
    assert named('"""Speaks of SGLang and NIXL."""\n# and of Mooncake\nx = 1\n') == []
