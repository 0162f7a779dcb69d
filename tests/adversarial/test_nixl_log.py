"""Hostile server logs read by NIXL's transport proof (pdrepro.parsers.nixl_log): arbitrary text, lines cut
from the recorded run and the fixtures and spliced with junk, lane lines with odd transports, devices and
brackets, restarts anywhere, lines ending in \\r\\n or \\r.

The promise held on every generated case: no exception; the verdict is one of rdma, tcp, intra-host,
unknown; every evidence line is a line of the input (never a line the reader made up or cut); evidence and
the names kept stay bounded; the streamed reading of the latest start agrees with the whole-text reading of
the text after the last start marker; describe() and to_dict() always work. Each strategy would have found a
fault fixed here: the first reader kept stripped lines (not the input's), counted a restart's earlier lanes,
kept every device a line named, and let a line the self endpoint logged over shared memory call the server
intra-host before any peer had connected.
"""

from __future__ import annotations

import json
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.parsers import nixl_log
from pdrepro.parsers.serverstart import START_MARKER

TESTS = Path(__file__).resolve().parents[1]
REAL = [line for path in sorted((TESTS / "recorded" / "h200-onebox-nixl-and-mooncake-sglang-0.5.15.post1" / "nixl"
                                 / "logs").glob("*.log"))
        for line in path.read_text().splitlines() if "UCX" in line or "NIXL" in line or START_MARKER in line]
BUILT = [line for path in sorted((TESTS / "fixtures" / "nixl").glob("*-fixture.log"))
         for line in path.read_text().splitlines()]
TRANSPORTS = sorted(nixl_log.RDMA_TRANSPORTS | nixl_log.HOST_TRANSPORTS | {"tcp", "ugni_rdma", "gga_mlx5", "X"})
KINDS = ["rma", "rma_am", "amo", "amo_am", "am", "tag", "stream", "ka", "device", "rma_bw"]
DEV = st.text(alphabet="abcmlx5_:0123 /()", min_size=0, max_size=10)
PAIR = st.builds(lambda tl, dev: f"{tl}/{dev}", st.sampled_from(TRANSPORTS), DEV)
LANE = st.builds(lambda k, pairs: f"{k}({' '.join(pairs)})", st.sampled_from(KINDS), st.lists(PAIR, max_size=3))
SCOPE = st.sampled_from(["self cfg#1", "intra-node cfg#2", "inter-node cfg#0", "ep_cfg[4]:", "cfg#", "nowhere"])
LANE_LINE = st.builds(lambda scope, lanes: f"[1.0] [h:1 :0]      ucp_worker.c:1997 UCX  INFO    c {scope} "
                      + "  ".join(lanes), SCOPE, st.lists(LANE, max_size=6))
LINE = st.one_of(st.sampled_from(REAL), st.sampled_from(BUILT), LANE_LINE,
                 st.just("[t] server_args=ServerArgs(model_path='/m')"),
                 # one line each: no character that splitlines() or a file would break on
                 st.text(st.characters(blacklist_categories=("Cc", "Zl", "Zp")), max_size=80))
END = st.sampled_from(["\n", "\r\n", "\r", ""])


def _input_lines(lines: list[str]) -> set[str]:
    return {line.rstrip("\r\n") for line in lines}


def _check(reading: nixl_log.NixlTransport, allowed: set[str]) -> None:
    assert reading.verdict in nixl_log.VERDICTS
    assert all(line in allowed for line in reading.evidence), [l for l in reading.evidence if l not in allowed]
    assert len(reading.evidence) <= nixl_log.MAX_EVIDENCE
    assert len(reading.transports) <= nixl_log.MAX_NAMES * 4
    assert all(len(devs) <= nixl_log.MAX_NAMES for devs in reading.transports.values())
    assert len(reading.backends) <= nixl_log.MAX_NAMES
    assert reading.role in reading.describe()
    json.dumps(reading.to_dict())


@settings(max_examples=examples(100))
@given(st.text(max_size=400))
def test_arbitrary_text_never_crashes(text):
    reading = nixl_log.scan("prefill", text)
    _check(reading, set(text.splitlines()))
    assert reading.lines_read == len(text.splitlines())


@settings(max_examples=examples(80))
@given(st.lists(st.tuples(LINE, END), max_size=40))
def test_spliced_logs_keep_their_promise_streamed_and_whole(pieces):
    lines = [text + end for text, end in pieces]
    streamed = nixl_log.scan_latest_start("decode", lines)
    _check(streamed, _input_lines(lines))
    # The latest start as a list of lines, read whole, says the same.
    starts = [i for i, line in enumerate(lines) if START_MARKER in line]
    latest = lines[starts[-1]:] if starts else lines
    whole = nixl_log.scan("decode", "\n".join(line.rstrip("\r\n") for line in latest))
    assert whole.verdict == streamed.verdict
    assert whole.transports == streamed.transports


@settings(max_examples=examples(60))
@given(st.lists(LANE_LINE, min_size=1, max_size=10))
def test_a_server_that_only_logged_its_self_endpoint_is_never_called_intra_host(lines):
    own = [line for line in lines if " self cfg#" in line]
    reading = nixl_log.scan("decode", "\n".join(own))
    assert reading.verdict != "intra-host"
    if reading.verdict in ("rdma", "tcp"):  # only network lanes of the self endpoint speak
        assert reading.transports.keys() & (nixl_log.RDMA_TRANSPORTS | {"tcp"})


@settings(max_examples=examples(40))
@given(st.lists(LANE_LINE, max_size=8), st.lists(LANE_LINE, min_size=1, max_size=8))
def test_what_an_earlier_start_logged_never_counts(before, after):
    lines = ["[t] " + START_MARKER + ")"] + before + ["[t] " + START_MARKER + ")"] + after
    streamed = nixl_log.scan_latest_start("prefill", lines)
    alone = nixl_log.scan_latest_start("prefill", lines[len(before) + 1:])
    assert streamed.to_dict() == alone.to_dict()
    assert streamed.lines_read == len(after) + 1
