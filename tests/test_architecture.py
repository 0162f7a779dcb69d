"""The package's import structure: no cycles, and no module importing one from a higher layer.

Data flows one way (scenario -> launch -> sweep -> raw results -> analysis -> report ->
checks); imports follow it downwards: a step may use what lies below it, never what
comes after it. The layers are written out here, bottom first, so a new module has to be
placed on purpose. Imports are read from the source with ``ast`` (those inside functions
too: a lazy import is still a dependency), nothing is imported.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pdrepro"

# Bottom first. A module may import modules of its own layer or of any layer below.
# Patterns are module names without the leading "pdrepro.", matched with fnmatch.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # What everything shares: errors, units, pins, the output contract, the run directory's
    # paths, log and output readers that know no step.
    ("base", ("", "errors", "units", "contract", "summarymodel", "rundir", "pins", "cliargs", "outputlens",
              "mooncake_log", "mooncake_engine", "typedload", "configyaml", "runfile", "strictmodel", "kvsize", "gpulock")),
    # The validated inputs: scenario, site facts, the smoke's transfer plan, their JSON Schemas.
    ("scenario", ("scenario", "launchspec", "siteinput", "smoke.plan", "schemagen")),
    # Readers of the upstream formats (bench client output, server logs, /metrics).
    ("parsers", ("parsers", "parsers.*")),
    # The hosts: RDMA fabric, GPUs, images and versions installed.
    ("host", ("fabric", "fabric.*", "gpucheck", "gpucheck.*", "versions_report", "buildcheck", "offline_model")),
    # Turning a scenario into running servers.
    ("launch", ("launch", "targets", "targets.*")),
    # Measuring against running servers: the sweep, and the smoke's agents in their containers.
    ("measure", ("sweep", "sweep.*", "smoke", "smoke.agent", "smoke.engine", "smoke.initiator", "smoke.target",
                 "smoke.measure", "smoke.memory", "smoke.output", "smoke.settings")),
    # What the raw results prove on their own (the NICs' counters against the KV).
    ("raw results", ("witness", "transport_evidence")),
    # Raw results -> summary, and the verdicts drawn from a summary.
    ("analysis", ("analysis", "comparison", "checks", "smoke.summary")),
    # Summary -> text and pictures for people; the reference pages drawn from the CLI and the schemas.
    ("report", ("report", "plots", "docgen", "docgen.*")),
    # Steps that write a run's results or pick the summary a verdict is drawn from; the smoke's host side.
    ("results", ("publish", "verdictinput", "smoke.run")),
    # The command line, and the reproduction pipeline that chains its commands (`pdrepro repro`).
    ("commands", ("commands", "commands.*", "cli", "__main__", "pipeline")),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports (names relative to the package)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for n in names:
            sub = f"{target}.{n}" if target else n
            if sub in modules:
                found.add(sub)
            elif target in modules:
                found.add(target)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + (node.module.split(".") if node.module else []))
            elif node.module and (node.module == "pdrepro" or node.module.startswith("pdrepro.")):
                target = node.module[len("pdrepro."):] if node.module != "pdrepro" else ""
            else:
                continue
            add(target, [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pdrepro."):
                    add(alias.name[len("pdrepro."):].rsplit(".", 1)[0], [alias.name.rsplit(".", 1)[1]])
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(name: str) -> int | None:
    for index, (_label, patterns) in enumerate(LAYERS):
        if any(fnmatchcase(name, p) for p in patterns):
            return index
    return None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_reader_sees_the_package():
    graph = _graph()
    # A reader that found nothing would pass every rule below.
    assert len(graph) > 50
    assert "contract" in graph["analysis"] and "rundir" in graph["analysis"]
    assert "sweep.runner" in graph["commands.sweep"]  # an import inside a function counts too


def test_no_import_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (each a set of modules importing each other): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_every_module_has_a_layer():
    unplaced = sorted(name or "pdrepro" for name in _graph() if _layer(name) is None)
    assert not unplaced, f"modules in no layer of {__file__}: {', '.join(unplaced)}; add each to LAYERS"


def test_no_module_imports_one_from_a_higher_layer():
    upward = []
    for name, targets in sorted(_graph().items()):
        own = _layer(name)
        for target in sorted(targets):
            other = _layer(target)
            if own is not None and other is not None and other > own:
                upward.append(f"{name or 'pdrepro'} ({LAYERS[own][0]}) imports {target} ({LAYERS[other][0]})")
    assert not upward, "imports that run up the layers: " + "; ".join(upward)


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder_finds_a_planted_cycle(graph, expected):
    assert _cycles(graph) == expected


def test_layer_rule_catches_a_planted_upward_import():
    assert _layer("analysis") > _layer("sweep.runner") > _layer("scenario") > _layer("contract")
    assert _layer("report") > _layer("analysis") and _layer("commands.check") > _layer("publish")
