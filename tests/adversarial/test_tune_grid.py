"""Hostile input to `pdrepro tune`: --grid strings (names that are no variable or flag, the plan's own flags and
variables, values with spaces, quotes, newlines, shell and YAML syntax, empty, repeated, too many), and the files
a tune's run folder holds that `--judge` (once `--collect`) trusts (RUN/tune-plan.json bent field by field, or no JSON at all;
settings named like a path out of the run, like the tune's own output files, or twice; a baseline without
repeats; a setting naming a knob the grid lacks; the output files already links to elsewhere).

The promise: exit 0, 1 or 2 only, one line naming the input on 2, never a traceback, nothing written outside
the run (a refused grid writes nothing at all); a grid that is taken gives settings that are scenarios the loader
accepts, each carrying exactly its values. A tune that trusted the grid would hand a server a flag the plan
already sets, or write a scenario whose extra server args split into other flags; one that trusted the plan
would judge ../elsewhere or crash on a baseline it cannot find."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.commands import run_command
from pdrepro.core.errors import UserError
from pdrepro.rundir import tuneplan
from pdrepro.scenario.model import load_scenario
from pdrepro.tune import grid

SCENARIO = load_scenario("onebox-qwen25-0.5b")
NAMES = ["SGLANG_DISAGGREGATION_THREAD_POOL_SIZE", "SGLANG_DISAGGREGATION_QUEUE_SIZE", "MC_NUM_QP_PER_EP",
         "MOONCAKE_PROTOCOL", "CUDA_VISIBLE_DEVICES", "SGLANG_HOST_IP", "UCX_TLS", "HOME", "MC_FORCE_TCP",
         "--page-size", "--tp-size", "--port", "--mem-fraction-static", "--disaggregation-mode", "--attention-backend",
         "--Page", "-p", "--", "---x", "--page size", "", "lower_case", "A=B", "É"]
ODD = ["", " ", "1 2", "'", '"', "\n", "$(id)", "`id`", ";", "a,b", "{}", "[1]", "- x", "--flag", ":", "#", "é",
       "\x00", "\u2028", "x" * 300, "-1", "0", "16", "true", "null", "~"]


@st.composite
def grid_texts(draw) -> str:
    # Mostly names and values a user would give (so grids are taken and their settings built), with the odd ones
    # mixed in where a parser slips: an odd value among plain ones, an odd name, a missing or doubled '='.
    name = draw(st.sampled_from(NAMES[:11]) if draw(st.integers(0, 2)) else st.sampled_from(NAMES) if
                draw(st.integers(0, 3)) else st.text(max_size=20))
    plain = st.sampled_from(["1", "4", "16", "-1", "0", "64", "tcp", "rdma", "true", "2.5"])
    if draw(st.integers(0, 2)):
        values = draw(st.lists(plain, min_size=1, max_size=3, unique=True))
    else:
        values = draw(st.lists(st.one_of(plain, st.sampled_from(ODD), st.text(max_size=8)), max_size=5))
    sep = draw(st.sampled_from(["=", "=", "=", "=", ":", "", "=="]))
    return f"{name}{sep}{','.join(values)}"


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = run_command(argv)
    return rc, err.getvalue()


def _one_line_or_ok(rc: int, err: str) -> None:
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err, err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, err


@settings(max_examples=examples(30, deep_count=1000))
@given(texts=st.lists(grid_texts(), min_size=1, max_size=3), one=st.booleans())
def test_a_grid_is_taken_whole_or_refused_on_one_line_and_nothing_is_written(texts, one):
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["tune", *[f"--grid={t}" for t in texts], "--out", str(Path(tmp) / "run")]
        rc, err = _cli(argv + (["--one-at-a-time"] if one else []))
        # No --model: a grid that is taken stops at the one-box check, which comes before anything is written.
        _one_line_or_ok(rc, err)
        assert rc == 2 and os.listdir(tmp) == [], (err, os.listdir(tmp))


@settings(max_examples=examples(30, deep_count=1000))
@given(texts=st.lists(grid_texts(), min_size=1, max_size=3), one=st.booleans())
def test_every_setting_of_a_taken_grid_is_a_scenario_carrying_exactly_its_values(texts, one):
    try:
        knobs = [grid.parse(t) for t in texts]
        grid.check(knobs, SCENARIO, ())
        points = grid.settings(knobs, SCENARIO, one)
    except UserError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("--grid"), str(exc)
        return
    owned = grid.plan_flags(SCENARIO)
    for point in points:
        variant = grid.variant(SCENARIO, point, knobs)  # validated as a scenario file; a refusal here is a bug
        assert variant.launch is not None
        args = list(variant.launch.extra_server_args)
        for name, value in point.values:
            if name.startswith("--"):
                assert name not in owned and args.count(name) == 1 and args[args.index(name) + 1] == value
            else:
                assert variant.launch.env[name] == value
        for k, v in SCENARIO.launch.env.items():  # type: ignore[union-attr]
            assert variant.launch.env[k] == v or k in dict(point.values)


def _valid_plan() -> dict:
    plan = tuneplan.TunePlan(
        label="tune s", scenario="s", mode="full grid",
        knobs=(tuneplan.PlanKnob(name="SGLANG_X", kind="env", values=("1", "2")),
               tuneplan.PlanKnob(name="--page-size", kind="flag", values=("16",))),
        settings=(tuneplan.PlanSetting(name="baseline", runs=("baseline-1", "baseline-2", "baseline-3")),
                  tuneplan.PlanSetting(name="s1", values={"SGLANG_X": "1"}, runs=("s1",)),
                  tuneplan.PlanSetting(name="s2", values={"SGLANG_X": "2", "--page-size": "16"}, runs=("s2",))))
    return json.loads(plan.model_dump_json())


HOSTILE = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=40), st.sampled_from(["../elsewhere", "/abs", ".", "..", "a/b", "baseline-1",
                                                           "s1", "tune-summary.json", "scenarios", "best-overlay.yaml",
                                                           "", "x" * 70, "one at a time", "flag", "env"]),
                    st.lists(st.sampled_from(["baseline-1", "s1", "../x", "", "tune-report.md"]), max_size=4),
                    st.dictionaries(st.sampled_from(["SGLANG_X", "--page-size", "HOME", ""]), st.text(max_size=5),
                                    max_size=3))


@st.composite
def bent_plans(draw) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([b"", b"\xff\xfe", b"[" * 5000, b"{\"a\": NaN}", b"\xef\xbb\xbf{}", b"null"]))
    data = _valid_plan()
    for _ in range(draw(st.integers(0, 3))):  # none: a valid plan, judged in full
        part = draw(st.sampled_from(["top", "setting", "knob"]))
        if part == "setting" and isinstance(data.get("settings"), list) and data["settings"] and \
                all(isinstance(s, dict) for s in data["settings"]):
            data["settings"][draw(st.integers(0, len(data["settings"]) - 1))][
                draw(st.sampled_from(["name", "values", "runs", "extra"]))] = draw(HOSTILE)
        elif part == "knob" and isinstance(data.get("knobs"), list) and data["knobs"] and \
                all(isinstance(k, dict) for k in data["knobs"]):
            data["knobs"][draw(st.integers(0, len(data["knobs"]) - 1))][
                draw(st.sampled_from(["name", "kind", "values", "baseline", "extra"]))] = draw(HOSTILE)
        else:
            data[draw(st.sampled_from(["label", "mode", "knobs", "settings", "schema_version", "extra"]))] = \
                draw(HOSTILE)
    return json.dumps(data).encode()


def _tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        out[key] = "link:" + os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else "dir"
    return out


OUTPUTS = ("tune-summary.json", "tune-report.md", "best-overlay.yaml")


@settings(max_examples=examples(30, deep_count=1000))
@given(plan=bent_plans(), linked=st.sets(st.sampled_from(OUTPUTS), max_size=2))
def test_collect_trusts_no_plan_and_writes_nothing_into_the_run(plan, linked):
    with tempfile.TemporaryDirectory() as tmp:
        run, elsewhere = Path(tmp) / "run", Path(tmp) / "elsewhere"
        run.mkdir()
        elsewhere.mkdir()
        (elsewhere / "keep.txt").write_text("not the tune's")
        (run / tuneplan.FILE).write_bytes(plan)
        for name in linked:  # an output already a link out of the run: never written through, nor over
            (run / name).symlink_to(elsewhere / "keep.txt")
        before = _tree(run)
        rc, err = _cli(["tune", "--judge", str(run)])
        _one_line_or_ok(rc, err)
        assert rc != 0  # no run folder of any plan exists: nothing passes
        assert _tree(elsewhere) == {"keep.txt": b"not the tune's"}
        assert sorted(os.listdir(tmp)) == ["elsewhere", "run"]
        # Judging only reads: whatever the plan says, the tune's folder is as it was.
        assert _tree(run) == before
