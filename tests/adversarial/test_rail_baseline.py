"""The per-port fabric baseline under any figures ib_write_bw may print, any output it may leave instead, and
any per-port record a baseline.json may hold.

The promise: `pdrepro baseline` exits 0 when every port reaches 90 % of its own line rate alone and all at
once, 1 naming exactly the ports and ways that fall short, 2 (one line, no traceback) when a port gave no
figure or one above its line rate, naming a port; it keeps what was measured in the run's baseline.json and
writes nothing outside the run. `pdrepro check` judges a hand-made record the same way, never trusting it.
The figure strategy would have found the fault fixed here (a port at 60 % passed: only the sum was looked
at); the output strategy the tool's last lines carried into the error as they came (new lines, escapes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import fakebin
from depth import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sysfs_builder import h20_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate

PEER = "192.168.100.12"
FLOOR = 0.9
TABLE = fakebin.served(fakebin.FIXTURES / "perftest" / "ib_write_bw-client-gbits.txt")
ROW = " 65536      7046312          0.00               369.41\t\t     0.704590"
RATES = {"100 Gb/sec (4X EDR)": 12.5, "200 Gb/sec (4X HDR)": 25.0, "400 Gb/sec (4X NDR)": 50.0}
PHASES = ("alone", "together")
WORDS = {"alone": "alone", "together": "with all ports at once"}


def _table(gbits: float) -> str:
    """perftest's client report (the fixture's layout) with this average, built here: a fixture, not a recording."""
    assert ROW in TABLE
    return TABLE.replace(ROW, f" 65536      1000000          0.00               {gbits:.2f}\t\t     0.100000")


# What one run of ib_write_bw leaves: a figure in Gb/s, or an output with no figure and the tool's exit status.
FIGURES = st.floats(0.01, 520.0).map(lambda g: round(g, 2))
# Escapes and carriage returns in what a tool prints would reach the terminal with the error, as they came.
NASTY = st.sampled_from(["\x1b[2J\x1b[31mFAIL\x1b[0m", "err\rPASS", "\x00\x07\x08", "a\u2028b", "\x1b]0;title\x07"])
BROKEN = st.tuples(st.one_of(st.just(""), st.text(max_size=80), st.just(TABLE.split(" #bytes")[0]), NASTY,
                             st.tuples(st.text(max_size=20), NASTY).map("".join),
                             st.binary(max_size=60).map(lambda b: b.decode("latin-1"))),
                   st.sampled_from([0, 1, 124]))
RUNS = st.one_of(FIGURES, FIGURES, FIGURES, BROKEN)
PORTS = st.lists(st.tuples(st.sampled_from(sorted(RATES)), RUNS, RUNS), min_size=1, max_size=4)


def _expect(ports: list) -> dict[tuple[str, str], str]:
    """(port, way) -> pass, short, unmeasured or contradiction, from the figures as the record rounds them."""
    out = {}
    for i, (rate, *runs) in enumerate(ports):
        line = RATES[rate]
        for phase, run in zip(PHASES, runs):
            if isinstance(run, tuple):
                out[(f"mlx5_{i}", phase)] = "unmeasured"
                continue
            figure = round(run / 8, 3)
            assume(abs(figure - FLOOR * line) > 0.01 and abs(figure - line) > 0.01)  # not on the knife's edge
            out[(f"mlx5_{i}", phase)] = ("contradiction" if figure > line else "short" if figure < FLOOR * line
                                         else "pass")
    return out


def _node(root: Path, ports: list) -> Path:
    """A node with one NIC per port at its rate, and an ib_write_bw that answers each -p with its run."""
    h20_node(root / "sys", nics=len(ports))
    bin_dir = root / "bin"
    case = []
    for i, (rate, *runs) in enumerate(ports):
        (root / "sys" / "class" / "infiniband" / f"mlx5_{i}" / "ports" / "1" / "rate").write_text(rate + "\n")
        for phase, run in zip(PHASES, runs):
            tcp = 18515 + i + (len(ports) if phase == "together" else 0)
            text, status = (run if isinstance(run, tuple) else (_table(run), 0))
            out = root / "outputs" / f"{tcp}.txt"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(text.encode("utf-8", "surrogatepass"))
            case.append(f"  {tcp}) cat '{out}'; exit {status};;\n")
    fakebin.install(bin_dir, "ib_write_bw", 'port=""\nwhile [ $# -gt 0 ]; do [ "$1" = "-p" ] && port="$2"; shift; done\n'
                    'case "$port" in\n' + "".join(case) + "esac\nexit 9\n")
    return bin_dir


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@settings(max_examples=examples(20), deadline=None)
@given(ports=PORTS)
def test_each_port_is_judged_alone_and_all_at_once(ports):
    expected = _expect(ports)
    with tempfile.TemporaryDirectory(prefix="pdrepro-railbase-") as tmp:
        root = Path(tmp)
        bin_dir = _node(root, ports)
        before = _files(root)
        out, err = io.StringIO(), io.StringIO()
        path = os.environ["PATH"]
        os.environ["PATH"] = f"{bin_dir}:/usr/bin:/bin"
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(["baseline", "--peer", PEER, "--sysfs-root", str(root / "sys"), "--out", str(root / "run"),
                           "--duration", "1", "--skip-te"])
        finally:
            os.environ["PATH"] = path
        states = set(expected.values())
        want = 2 if states & {"unmeasured", "contradiction"} else 1 if "short" in states else 0
        assert rc == want, (rc, expected, err.getvalue())
        # Nothing written outside the run folder.
        assert {p for p in _files(root) - before if (root / "run") not in p.parents} == set()
        record = json.loads((root / "run" / "baseline.json").read_text())
        kept = {(p["local"], phase): p[phase]["bw_average_GB_s"] for p in record["ib_write_bw"]["ports"]
                for phase in PHASES}
        for (port, phase), run in zip(expected, [r for _, *runs in ports for r in runs]):
            # What was measured is kept, refused or not; an output without a figure has none.
            assert kept[(port, phase)] == (None if isinstance(run, tuple) else round(run / 8, 3))
        if rc == 2:
            lines = err.getvalue().strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in err.getvalue()
            assert lines[0].isprintable()
            named = [f"port {p} {WORDS[ph]}:" for (p, ph), s in expected.items() if s in ("unmeasured", "contradiction")]
            assert any(n in lines[0] for n in named), (lines[0], named)
        else:
            fails = {l.split(":")[0] for l in out.getvalue().splitlines() if l.startswith("FAIL ")}
            assert fails == {f"FAIL port {p} {WORDS[ph]}" for (p, ph), s in expected.items() if s == "short"}


SCENARIO = load_scenario("h20-qwen3-235b-1p1d")
ODD = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.integers(-10, 10**6),
                st.floats(allow_nan=True, allow_infinity=True))
RUN = st.one_of(st.none(), ODD, st.fixed_dictionaries({"bw_average_GB_s": ODD}, optional={"error": st.one_of(ODD, NASTY)}))
PORT = st.fixed_dictionaries({"local": st.one_of(st.text(min_size=1, max_size=8), NASTY)},
                             optional={"remote": ODD, "line_rate_GB_s": ODD, "alone": RUN, "together": RUN})
RECORD = st.one_of(st.fixed_dictionaries({"ports": st.lists(PORT, max_size=4)}, optional={"aggregate_GB_s": ODD}),
                   ODD, st.lists(ODD, max_size=2))
_RUN: dict[str, object] = {}


def _run():
    """One built run for the module (building one takes longer than judging it)."""
    if "run" not in _RUN:
        import atexit
        import shutil

        from runbuilder import build_run, sweep_provenance
        root = Path(tempfile.mkdtemp(prefix="pdrepro-railbase-run-"))
        atexit.register(shutil.rmtree, root, True)
        _RUN["run"] = build_run(root / "r", SCENARIO, provenance=sweep_provenance(SCENARIO))
    return _RUN["run"]


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@settings(max_examples=examples(30), deadline=None)
@given(perftest=RECORD)
def test_check_judges_any_record_and_trusts_none(perftest):
    run = _run()
    run.baseline_file.write_text(json.dumps({"ib_write_bw": perftest}))
    try:
        summary = compute_summary(run, SCENARIO)
    except UserError as exc:
        assert "\n" not in str(exc) and "baseline.json" in str(exc)
        return
    checks = [r for r in evaluate(summary, SCENARIO) if r.name.startswith("port_baseline_")]
    ports = perftest["ports"] if isinstance(perftest, dict) else []
    assert len(checks) == 2 * len(ports)
    for r in checks:
        assert r.verdict in ("PASS", "FAIL") and "\n" not in r.detail
        if r.passed:
            # A pass is a number between the floor and the port's own line rate, nothing else.
            assert r.figure is not None and r.bound is not None and r.bound <= r.figure <= r.bound / FLOOR * (1 + 1e-9)
    for port, pair in zip(ports, zip(checks[::2], checks[1::2])):
        line = _number(port.get("line_rate_GB_s"))
        for phase, r in zip(PHASES, pair):
            run_ = port.get(phase)
            figure = _number(run_.get("bw_average_GB_s")) if isinstance(run_, dict) else None
            good = (line is not None and figure is not None and 0 < line < float("inf")
                    and FLOOR * line <= figure <= line)
            assert r.passed == good, (port, phase, r.detail)
