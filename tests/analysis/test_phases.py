"""The per-request phases (analysis/phases.py): which lines a row's phase medians are drawn from, what they are,
and that no figure in a log can put NaN or infinity into summary.json."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from recordedrun import RECORDED, copy_run

from pdrepro.analysis.phases import MAX_PHASE_MS, decode_of, phase_figures
from pdrepro.analysis.summarize import compute_summary
from pdrepro.parsers.reqstats import parse_line
from pdrepro.rundir import RunDir
from pdrepro.rundir.contract import dumps_json
from pdrepro.rundir.issuekind import IssueKind
from pdrepro.scenario.model import load_scenario

TUNE_RUN = RECORDED.parent / "h200-tune-0.5b-mooncake-tcp-sglang-0.5.15.post1" / "tune" / "baseline-1"

# Fixture lines, built for these tests in the exact format of the H200 run's logs (SGLang 0.5.15.post1); the
# figures are chosen, not measured. A request has its own rid on each server and one bootstrap room on both.
PREFILL = ("[2026-12-02 06:13:40] ReqTimeStats(rid=p{i}, bootstrap_room={room}, input_len={n}, cached_input_len=0, "
           "output_len=1, type=prefill): bootstrap_duration={b}ms, queue_duration=0.53ms, forward_duration={f}ms, "
           "entry_time=1796191892.793, transfer_speed=1.20 GB/s, transfer_total=48.00 MB, #retries=0")
DECODE = ("[2026-12-02 06:13:40] ReqTimeStats(rid=d{i}, bootstrap_room={room}, input_len={n}, cached_input_len=0, "
          "output_len=8, type=decode): bootstrap_duration=0.56ms, alloc_wait_duration=0.86ms, transfer_duration={t}ms, "
          "queue_duration=0.21ms, forward_duration=76.42ms, entry_time=1796191957.369")


def _prefill(i, room, n=4096, b="0.79", f="792.93"):
    return parse_line(PREFILL.format(i=i, room=room, n=n, b=b, f=f))


def _decode(i, room, n=4096, t="10.00"):
    return parse_line(DECODE.format(i=i, room=room, n=n, t=t))


def test_medians_of_each_phase_keyed_role_dot_phase_in_milliseconds():
    prefill = [_prefill(1, 11, b="1.00", f="100.00"), _prefill(2, 12, b="3.00", f="300.00"),
               _prefill(3, 13, b="2.00", f="250.00")]
    decode = [_decode(1, 11, t="5.00"), _decode(2, 12, t="7.00")]
    issues: list[dict] = []
    figures = phase_figures(4096, prefill, decode, issues, "logs")
    assert figures["phase_ms_median"] == pytest.approx({
        "prefill.bootstrap": 2.0, "prefill.queue": 0.53, "prefill.forward": 250.0,
        "decode.bootstrap": 0.56, "decode.alloc_wait": 0.86, "decode.transfer": 6.0, "decode.queue": 0.21,
        "decode.forward": 76.42})
    assert figures["phase_samples"] == {"prefill.bootstrap": 3, "prefill.queue": 3, "prefill.forward": 3,
                                        "decode.bootstrap": 2, "decode.alloc_wait": 2, "decode.transfer": 2,
                                        "decode.queue": 2, "decode.forward": 2}
    assert issues == []


def test_no_duration_on_any_line_gives_no_phase_keys():
    old = parse_line("[2025-03-01 08:00:00 TP0] Req Time Stats(rid=x, input len=1024, output len=1, type=prefill): "
                     "transfer_speed=10.00 GB/s, transfer_total=47.00 MB")
    assert phase_figures(1024, [old], [], [], "logs") == {}
    assert phase_figures(1024, [], [], [], "logs") == {}


def test_decode_lines_are_the_prefills_requests_by_room_when_rids_differ():
    measured = [_prefill(1, 11), _prefill(2, 12)]
    decode = [_decode(9, 10), _decode(1, 11, t="1.00"), _decode(2, 12, t="2.00"), _decode(3, 13)]
    got = decode_of(measured, decode, decode, warmup=1)
    assert [d.rid for d in got] == ["d1", "d2"]


def test_decode_lines_by_rid_where_the_servers_share_it():
    measured = [parse_line(PREFILL.format(i=1, room=0, n=4096, b="1", f="2").replace("rid=p1", "rid=shared"))]
    decode = [parse_line(DECODE.format(i=1, room=0, n=4096, t="3").replace("rid=d1", "rid=shared")), _decode(2, 0)]
    assert [d.rid for d in decode_of(measured, decode, decode, warmup=0)] == ["shared"]


def test_rooms_on_both_sides_that_match_none_give_no_decode_figures():
    # Another run's decode log: every line has a room, none the prefill's. Taking them by length would mix runs.
    measured = [_prefill(1, 11), _prefill(2, 12)]
    decode = [_decode(1, 91), _decode(2, 92)]
    assert decode_of(measured, decode, decode, warmup=0) == []


def test_without_rooms_the_decode_lines_of_the_length_less_the_warm_up():
    old = ("[2025-03-01 08:00:00 TP0] Req Time Stats(rid={rid}, input len=1024, output len=8, type=decode): "
           "transfer_duration={t}ms, forward_duration=9.00ms")
    decode = [parse_line(old.format(rid=f"d{i}", t=i)) for i in range(5)]
    measured = [parse_line(PREFILL.format(i=i, room=0, n=1024, b="1", f="2").replace(" bootstrap_room=0,", ""))
                for i in range(3)]
    assert all(m.bootstrap_room is None for m in measured)
    # Warm-up (1) left out, then no more than the prefill measured: the last three.
    assert [d.rid for d in decode_of(measured, decode, decode, warmup=1)] == ["d2", "d3", "d4"]
    assert [d.rid for d in decode_of([], decode, decode, warmup=1)] == ["d1", "d2", "d3", "d4"]


# Any text a damaged or edited log may hold where a duration goes, that the parser reads as a number.
_NUMBER = st.one_of(
    st.floats(min_value=0, max_value=1e12, allow_nan=False).map(lambda x: f"{x:.2f}"),
    st.integers(min_value=0, max_value=10 ** 400).map(str),
    st.tuples(st.integers(0, 9), st.integers(-400, 400)).map(lambda p: f"{p[0]}e{p[1]}"),
    st.just("1" * 330),
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(_NUMBER, _NUMBER), min_size=1, max_size=6), st.lists(_NUMBER, max_size=6))
def test_no_figure_in_a_log_puts_nan_or_infinity_into_the_summary(prefill_figures, transfer_figures):
    prefill = [_prefill(i, 100 + i, b=b, f=f) for i, (b, f) in enumerate(prefill_figures)]
    # Decode lines of the prefill's requests only (rooms 100, 101, ...): a line of no measured request is no figure.
    transfer_figures = transfer_figures[:len(prefill)]
    decode = [_decode(i, 100 + i, t=t) for i, t in enumerate(transfer_figures)]
    issues: list[dict] = []
    figures = phase_figures(4096, prefill, decode_of(prefill, decode, decode, 0), issues, "logs")
    text = json.dumps(figures, allow_nan=False)  # raises on NaN or infinity
    medians = json.loads(text).get("phase_ms_median", {})
    assert all(math.isfinite(v) and 0 <= v <= MAX_PHASE_MS for v in medians.values())
    # Each median lies between the figures it is drawn from, and a dropped figure is said.
    kept = {"prefill.bootstrap": [float(b) for b, _ in prefill_figures],
            "prefill.forward": [float(f) for _, f in prefill_figures],
            "decode.transfer": [float(t) for t in transfer_figures]}
    for key, raw in kept.items():
        ok = [v for v in raw if v <= MAX_PHASE_MS]
        if ok:
            assert min(ok) - 1e-6 <= medians[key] <= max(ok) + 1e-6
            assert medians[key] == pytest.approx(statistics.median(ok))
        else:
            assert key not in medians
    dropped = sum(v > MAX_PHASE_MS for raw in kept.values() for v in raw)
    assert bool(dropped) == any(i["kind"] == IssueKind.IMPLAUSIBLE_PHASE for i in issues)


def test_a_run_whose_logs_hold_impossible_durations_still_writes_valid_json(tmp_path):
    run = copy_run(tmp_path, TUNE_RUN)
    logs = run / "logs"
    for name, key, value in (("decode.log", "forward_duration", "1e400"), ("prefill.log", "queue_duration", "9" * 320)):
        text = (logs / name).read_text()
        # The last request of the sweep (16384 tokens): a measured one.
        last = max(m.start() for m in re.finditer(r"input_len=16384", text))
        line_end = text.index("\n", last)
        line = text[last:line_end]
        text = text[:last] + re.sub(rf"{key}=[\d.]+ms", f"{key}={value}ms", line) + text[line_end:]
        (logs / name).write_text(text)
    summary = compute_summary(RunDir(run), load_scenario(run / "scenario.yaml"))
    json.loads(dumps_json(summary, run / "summary.json"))
    row = next(r for r in summary["rows"] if r["prompt_len"] == 16384)
    assert row["phase_samples"]["decode.forward"] == row["phase_samples"]["prefill.queue"] == 9
    assert row["phase_samples"]["decode.queue"] == 10
    warned = [i for i in summary["issues"] if i["kind"] == IssueKind.IMPLAUSIBLE_PHASE]
    assert len(warned) == 1 and warned[0]["severity"] == "warning" and "2 phase figure(s) of length 16384" in warned[0]["message"]
