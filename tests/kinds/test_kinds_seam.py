"""The run kinds' seam, held by construct (the syntax tree), not by words, since kind names are ordinary words:
outside the kinds room (src/pdrepro/kinds/) no module reads a composite's state or plan files (imports
rundir.armsstate, rundir.tuneplan or rundir.loadstate), compares a run's ``source`` or ``kind`` to a literal
naming a kind, or tests a scenario's class (isinstance against a scenario model) to pick a behaviour. The
runners that write those files, and the kinds' own judges the room wraps, are allowed by name, each with why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pdrepro.kinds import registry
from pdrepro.rundir import summarymodel
from pdrepro.scenario import model as scenario_model

SRC = Path(__file__).resolve().parents[2] / "src" / "pdrepro"
ROOM = SRC / "kinds"
STATE_FILES = {"armsstate", "tuneplan", "loadstate"}

# Who may import a composite's state or plan file outside the room, and why.
STATE_READERS = {
    "rundir/absummary.py": "the A/B summary opens its label as the arms state does (LabelHead)",
    "rundir/tunesummary.py": "the tune summary opens its label as the arms state does (LabelHead)",
    "arms.py": "the arms runner writes arms-state.json (ab, tune, compare)",
    "member.py": "a member of the arms runner, recorded in arms-state.json as its requests' flags (ArmRecord)",
    "commands/memberwords.py": "a resume reads each arm's recorded words (ArmRecord) back into the requests they ask for",
    "commands/ab.py": "the A/B runner plans its arms and resumes from their state",
    "commands/tune.py": "the tune runner writes tune-plan.json and resumes from the arms state",
    "commands/load.py": "the load runner builds the plan load-state.json records",
    "sweep/loadrun.py": "the load runner writes load-state.json and resumes from it",
    "sweep/loadsteps.py": "the load runner's step words, bounded as load-state.json bounds them",
    "tune/collect.py": "the tune's own judge and writer, which kinds/tune.py wraps",
    "tune/judge.py": "the tune's own judge, which kinds/tune.py wraps",
    "publish/abjudge.py": "the A/B's own judge, which kinds/ab.py wraps (it holds each arm's record to the run's id)",
    "analysis/load.py": "the load's own judge, which kinds/load.py wraps",
}
# Who may test a scenario's class outside the room, and why.
CLASS_TESTS = {
    "analysis/comparison.py": "compute_comparison refuses a scenario of another kind: a guard of its input, the compare "
                              "kind picks it",
    "commands/compare.py": "the compare runner refuses scenarios that are no comparison before it starts a stack",
    "commands/smoke.py": "the smoke runner refuses a scenario that is no kv-sweep before it starts its containers",
}
# The words a run's ``source`` or ``kind`` holds: the kinds' names, the summary models' keys, the scenario kinds.
KIND_WORDS = {"sweep", "smoke", "load", "ab", "tune", "compare", "comparison", "sglang", "kv-sweep", "fault"}
SCENARIO_CLASSES = {name for name, value in vars(scenario_model).items()
                    if isinstance(value, type) and name.endswith("Scenario")}


def _modules() -> list[Path]:
    """Every module outside the room, less the state files' own models (rundir/armsstate.py, ...)."""
    return sorted(p for p in SRC.rglob("*.py") if ROOM not in p.parents
                  and not (p.parent.name == "rundir" and p.stem in STATE_FILES))


def _rel(path: Path) -> str:
    return path.relative_to(SRC).as_posix()


def state_imports(path: Path) -> list[str]:
    """The composite state or plan modules ``path`` imports (absolute or relative, module or name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            found += [p for p in parts if p in STATE_FILES]
            found += [a.name for a in node.names if a.name in STATE_FILES]
        elif isinstance(node, ast.Import):
            found += [p for a in node.names for p in a.name.split(".") if p in STATE_FILES]
    return found


def _kind_key(node: ast.AST) -> bool:
    """``x.source``, ``x.kind``, ``x["kind"]`` or ``x.get("kind")``."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("source", "kind")
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in ("source", "kind")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        first = node.args[0]
        return isinstance(first, ast.Constant) and first.value in ("source", "kind")
    return False


def _kind_words(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in KIND_WORDS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_kind_words(e) for e in node.elts)
    return False


def kind_branches(source: str) -> list[str]:
    """Every comparison of a run's source or kind with a kind's word, and every test of a scenario's class."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_kind_key(s) for s in sides) and any(_kind_words(s) for s in sides):
                found.append(f"line {node.lineno}: compares a run's source or kind with a kind's name")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "type"):
            names = {n.id for arg in node.args[1:] for n in ast.walk(arg) if isinstance(n, ast.Name)}
            names |= {n.attr for arg in node.args[1:] for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
            if names & SCENARIO_CLASSES:
                found.append(f"line {node.lineno}: tests a scenario's class ({', '.join(sorted(names & SCENARIO_CLASSES))})")
    return found


def test_the_words_cover_every_kind():
    # A kind added to the registry, or a summary model keyed by a new word, is held by the seam too.
    keys = set(summarymodel._BY_KIND) | set(summarymodel._BY_SOURCE)
    assert set(registry.names()) | keys <= KIND_WORDS
    assert {"ComparisonScenario", "KvSweepScenario"} <= SCENARIO_CLASSES


def test_no_state_file_read_outside_the_room():
    modules = _modules()
    assert len(modules) > 100  # a walk that found nothing would pass
    bad = {_rel(p): sorted(set(found)) for p in modules if (found := state_imports(p)) and _rel(p) not in STATE_READERS}
    assert not bad, (f"{bad}: a composite's state and plan files are read in src/pdrepro/kinds/ (or by a runner that "
                     "writes them, allowed by name with its reason)")


def test_no_kind_branch_outside_the_room():
    bad = {}
    for path in _modules():
        found = kind_branches(path.read_text())
        if _rel(path) in CLASS_TESTS:
            found = [f for f in found if "scenario's class" not in f]
        if found:
            bad[_rel(path)] = found
    assert not bad, f"{bad}; ask the kinds registry (or the summary model's class variables)"


def test_the_allow_lists_name_real_readers():
    # An entry whose module no longer reads the files is dropped, so the list never grows stale.
    for rel in STATE_READERS:
        assert state_imports(SRC / rel), f"{rel} is allowed to read a state file but reads none"
    for rel in CLASS_TESTS:
        assert any("scenario's class" in f for f in kind_branches((SRC / rel).read_text())), rel


@pytest.mark.parametrize("planted, caught", [
    ("if summary.source == 'smoke':\n    pass\n", True),
    ("if run.kind != \"comparison\":\n    pass\n", True),
    ("ok = data.get('kind') in ('tune', 'ab')\n", True),
    ("ok = isinstance(scenario, ComparisonScenario)\n", True),
    ("ok = isinstance(s, model.KvSweepScenario)\n", True),
    ("ok = buf.kind == 'gpu'\n", False),            # a buffer's kind is no run's
    ("ok = summary.measures_ttft\n", False),       # a kind's trait, asked
])
def test_the_seam_catches_a_planted_branch(planted, caught):
    assert bool(kind_branches(planted)) is caught


def test_a_planted_state_import_is_caught(tmp_path):
    for text in ("from ..rundir import armsstate\n", "from ..rundir.tuneplan import TunePlan\n",
                 "import pdrepro.rundir.loadstate\n"):
        planted = tmp_path / "planted.py"
        planted.write_text(text)
        assert state_imports(planted)
