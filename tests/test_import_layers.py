"""The package's import layers, enforced by import-linter from the contracts in pyproject.toml.

Data flows one way (scenario -> launch -> sweep -> raw results -> analysis -> report ->
verdicts) and imports follow it downwards. import-linter checks that no module imports one
from a higher layer and that sibling modules do not import each other in a circle; what it
does not check is that every module sits in some layer, so that is checked here: a new
module has to be placed on purpose.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from pyproject_data import load_pyproject

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _layers() -> list[list[str]]:
    """The layers contract's layers, top first, each as its module names."""
    contracts = load_pyproject()["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [[name.strip() for name in layer.replace("|", ":").split(":")] for layer in layers]


def _lint_imports(src: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    sys.path.insert(0, str(SRC))
    try:
        return grimp.build_graph("pdrepro", cache_dir=None)
    finally:
        sys.path.remove(str(SRC))


def test_the_contracts_hold():
    result = _lint_imports(SRC)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # Every contract of pyproject.toml was checked, none broken (a new contract needs no edit here).
    contracts = len(load_pyproject()["tool"]["importlinter"]["contracts"])
    assert f"{contracts} kept, 0 broken" in result.stdout


def test_the_graph_sees_the_package(graph):
    # A graph that found nothing would keep every contract.
    assert len(graph.modules) > 50
    assert "pdrepro.rundir.contract" in graph.find_modules_directly_imported_by("pdrepro.analysis.summarize")
    # An import inside a function counts too: a lazy import is still a dependency.
    assert "pdrepro.sweep.runner" in graph.find_modules_directly_imported_by("pdrepro.commands.sweep")


def _layer_of(module: str, layers: list[list[str]]) -> list[int]:
    return [i for i, layer in enumerate(layers) for name in layer if module == name or module.startswith(name + ".")]


def test_every_module_has_one_layer(graph):
    layers = _layers()
    unplaced, twice = [], []
    for module in sorted(graph.modules):
        found = _layer_of(module, layers)
        # A package whose modules live in several layers (smoke) has no layer itself; it may import nothing.
        split_package = not found and any(name.startswith(module + ".") for layer in layers for name in layer)
        if split_package:
            imported = sorted(m for m in graph.find_modules_directly_imported_by(module) if m.startswith("pdrepro."))
            assert not imported, f"{module} has no layer (its modules are in several) but imports {imported}"
        elif not found:
            unplaced.append(module)
        elif len(found) > 1:
            twice.append(module)
    assert not unplaced, f"modules in no layer of pyproject.toml [tool.importlinter]: {', '.join(unplaced)}; add each"
    assert not twice, f"modules in more than one layer: {', '.join(twice)}"


def test_a_planted_lazy_upward_import_breaks_the_contract(tmp_path):
    # A module of the bottom layer that imports the command line inside a function.
    shutil.copytree(SRC / "pdrepro", tmp_path / "pdrepro", ignore=shutil.ignore_patterns("__pycache__"))
    errors = tmp_path / "pdrepro" / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\n\ndef _planted():\n    from ..cli import main\n\n    return main\n")
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout[-4000:]
    assert "pdrepro.core.errors -> pdrepro.cli" in result.stdout
    assert "Imports run down the data flow's layers BROKEN" in result.stdout
