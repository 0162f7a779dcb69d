"""Verdicts are read-only and agree, on hostile run folders (issue 22, items 9, 10 and 13).

Valid run folders of a smoke and of a one-box sweep, made hostile: a file dropped, duplicated under another
length's or server's name, cut short or overwritten with noise, another run's summary.json swapped in, a
JSON record given a value of the wrong type; judged by the run's own scenario or another. For each,
`pdrepro check` and `pytest repro/` exit 0, 1 or 2, print one line on 2 and no traceback, change no byte of
the run, and reach the same status; `pdrepro analyze` then works or refuses in one line. These are the
faults the strategy was written to find: check rewriting the run it judged (and with another --scenario),
the gates failing a run check passed (or the reverse), analyze of the smoke's own output ending in
AttributeError, a summary of the wrong shape ending in a traceback inside the report or the verdicts.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from clihelp import pdrepro
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from runkinds import build_smoke_run, build_sweep_run, error_lines, gates, tree_hash

WRONG = st.sampled_from(["x", [], {}, None, -1, 1e308, True, {"rows": 7}, [[1]]])


def _bases() -> dict[str, Path]:
    """One valid run of each kind, made once (each example works on a copy)."""
    global _BASES
    if _BASES is None:
        top = Path(tempfile.mkdtemp(prefix="pdrepro-adv-"))
        smoke = build_smoke_run(top / "smoke").root
        sweep = build_sweep_run(top / "sweep", "onebox-qwen25-0.5b").root
        assert pdrepro("analyze", sweep).rc in (0, 2)  # its summary.json, to be swapped and mangled
        _BASES = {"smoke": smoke, "sweep": sweep}
    return _BASES


_BASES: dict[str, Path] | None = None


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def _json_paths(data, depth=0):
    """Every (key path) into a JSON document, to depth 3."""
    if depth > 3:
        return
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield (key,)
        for rest in _json_paths(value, depth + 1) or ():
            yield (key, *rest)


def _mutate(draw, root: Path, other: Path) -> str:
    op = draw(st.sampled_from(["drop", "duplicate", "truncate", "noise", "swap_summary", "wrong_type"]))
    files = _files(root)
    if op == "swap_summary" and (other / "summary.json").is_file():
        shutil.copy(other / "summary.json", root / "summary.json")
        return op
    if op == "wrong_type":
        records = [p for p in files if p.suffix == ".json"]
        if records:
            path = draw(st.sampled_from(records))
            try:
                data = json.loads(path.read_text())
            except ValueError:
                data = None
            paths = list(_json_paths(data)) if data is not None else []
            if paths:
                where = draw(st.sampled_from(paths))
                node = data
                for key in where[:-1]:
                    node = node[key]
                node[where[-1]] = draw(WRONG)
                path.write_text(json.dumps(data))
                return f"{op} {path.relative_to(root)} {where}"
    path = draw(st.sampled_from(files))
    rel = path.relative_to(root)
    if op == "drop":
        path.unlink()
    elif op == "duplicate":
        twin = {"bench": "result-77.jsonl", "counters": "77.json", "logs": "prefill-1.log", "raw": "target.json"}
        dest = path.with_name(twin.get(rel.parts[0], path.name + ".copy")) if len(rel.parts) > 1 else root / "extra.json"
        shutil.copy(path, dest)
    elif op == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[:draw(st.integers(0, max(len(data) - 1, 0)))])
    else:
        path.write_bytes(draw(st.binary(max_size=64)))
    return f"{op} {rel}"


def _promise(rc: int, out: str, err: str, what: str) -> None:
    assert rc in (0, 1, 2), (what, rc, out[-1500:], err[-1500:])
    assert "Traceback" not in out + err, (what, err[-3000:])
    if rc == 2:
        assert len(error_lines(out + err)) == 1, (what, out[-1500:], err[-1500:])


# Each example runs the gates in a child process: few seeded examples keep `make test` fast; the deep
# profile (make adversarial-deep) runs ten times as many.
@settings(max_examples=examples(3))
@given(kind=st.sampled_from(["smoke", "sweep"]), data=st.data(), count=st.integers(1, 2),
       judge_by=st.sampled_from([None, None, "smoke-tcp", "onebox-qwen25-0.5b", "h20-qwen3-235b-1p1d"]))
def test_check_and_the_gates_agree_and_write_nothing_on_hostile_runs(kind, data, count, judge_by):
    bases = _bases()
    with tempfile.TemporaryDirectory(prefix="pdrepro-adv-") as top:
        root = Path(top) / "run"
        shutil.copytree(bases[kind], root, symlinks=True)
        other = bases["sweep" if kind == "smoke" else "smoke"]
        done = [_mutate(data.draw, root, other) for _ in range(count)]
        before = tree_hash(root)
        # Judged by its own scenario, or by another one as asked (`check RUN --scenario OTHER` once rewrote RUN).
        by = () if judge_by is None else ("--scenario", judge_by)

        checked = pdrepro("check", root, *by)
        _promise(checked.rc, checked.out, checked.err, f"check after {done}")
        assert tree_hash(root) == before, f"check wrote into the run it judged after {done}"

        judged = gates(root, Path(top) / "junit.xml", *by)
        _promise(judged.returncode, judged.stdout, judged.stderr, f"gates after {done}")
        assert tree_hash(root) == before, f"the gates wrote into the run they judged after {done}"
        assert judged.returncode == checked.rc, (done, checked.out[-2000:], checked.err, judged.stdout[-3000:])

        analyzed = pdrepro("analyze", root)
        _promise(analyzed.rc, analyzed.out, analyzed.err, f"analyze after {done}")
        assert analyzed.rc in (0, 2)


def _pins_as_a_list(root: Path, other: Path) -> None:
    prov = json.loads((root / "provenance.json").read_text())
    prov["pins"] = []
    (root / "provenance.json").write_text(json.dumps(prov))


def _smoke_summary_swapped_in(root: Path, other: Path) -> None:
    shutil.copy(other / "summary.json", root / "summary.json")


def _smoke_raw_result_dropped(root: Path, other: Path) -> None:
    (root / "raw" / "initiator.json").unlink()


# The cases the strategy shrank to (or was written for), kept as fixed examples: each once ended in a traceback,
# a write into the run, or check and the gates disagreeing.
@pytest.mark.parametrize("kind, mutate", [("sweep", _pins_as_a_list), ("sweep", _smoke_summary_swapped_in),
                                          ("smoke", _smoke_raw_result_dropped)], ids=lambda v: getattr(v, "__name__", v))
def test_the_cases_found_stay_fixed(tmp_path, kind, mutate):
    bases = _bases()
    root = tmp_path / "run"
    shutil.copytree(bases[kind], root, symlinks=True)
    mutate(root, bases["sweep" if kind == "smoke" else "smoke"])
    before = tree_hash(root)
    checked = pdrepro("check", root)
    _promise(checked.rc, checked.out, checked.err, mutate.__name__)
    judged = gates(root, tmp_path / "junit.xml")
    assert (checked.rc, tree_hash(root)) == (judged.returncode, before), (checked.err, judged.stdout[-2000:])
    assert checked.rc == 2  # each is bad input, named in one line
    analyzed = pdrepro("analyze", root)
    _promise(analyzed.rc, analyzed.out, analyzed.err, mutate.__name__)
