"""An xPyD run: the router spreads requests over several prefill servers, each logging its own share.
The analysis reads every server's log of the run, so the table covers every request the bench sent."""

from __future__ import annotations

import pytest
from runbuilder import build_run

from pdrepro.analysis.summarize import compute_summary
from pdrepro.parsers.reqstats import merge_scans, parse_log
from pdrepro.scenario.model import load_scenario

SCENARIO = load_scenario("h20-qwen3-235b-2p2d")
PUBLISHED = {r.prompt_len: r for r in SCENARIO.reference.rows}
# The counters are read on one node of each role: it carries its half of the round robin.
HALF = {"nic_share": {L: 0.5 for L in PUBLISHED}}


def _kinds(summary) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for i in summary["issues"]:
        out.setdefault(i["kind"], []).append(i["message"])
    return out


@pytest.fixture(scope="module")
def two_by_two(tmp_path_factory):
    run = build_run(tmp_path_factory.mktemp("2p2d"), SCENARIO, **HALF)
    return run, compute_summary(run, SCENARIO)


def test_each_server_logged_its_share(two_by_two):
    run, _ = two_by_two
    assert [p.name for p in run.role_logs("prefill")] == ["prefill.log", "prefill-1.log"]
    assert [p.name for p in run.role_logs("decode")] == ["decode.log", "decode-1.log"]
    counts = [len([s for s in parse_log(p).stats if not s.is_health_check]) for p in run.role_logs("prefill")]
    # 9 lengths x (50 + 1 warm-up) requests, alternating: neither log alone holds them all.
    assert counts == [230, 229]


def test_table_covers_every_request_of_both_servers(two_by_two):
    _, summary = two_by_two
    rows = {r["prompt_len"]: r for r in summary["rows"]}
    assert sorted(rows) == sorted(PUBLISHED)
    for L, ref in PUBLISHED.items():
        row = rows[L]
        assert row["requests"] == 50 and row["transfer_samples"] == 50, L
        assert row["transfer_ms_median"] == pytest.approx(ref.transfer_ms, abs=0.006)
        # Only the warm-up (six times slower) left out: one kept would lift the mean by ~10 %.
        assert row["transfer_ms_mean"] == pytest.approx(ref.transfer_ms, rel=0.002)
    assert summary["issues"] == []


def test_a_missing_server_log_is_named_and_its_requests_counted_short(tmp_path):
    run = build_run(tmp_path, SCENARIO, drop_logs={("prefill", 1)}, **HALF)
    summary = compute_summary(run, SCENARIO)
    kinds = _kinds(summary)
    assert kinds["prefill_logs_missing"] == [
        f"{run.logs_dir}: 1 prefill server log(s), the 2P2D topology runs 2; the others' requests are not in the figures: "
        "copy every server's log (prefill.log, prefill-1.log, ...) with `pdrepro sweep --logs-from` the folder they share"]
    rows = {r["prompt_len"]: r for r in summary["rows"]}
    assert all(r["transfer_samples"] < 30 for r in rows.values())
    assert len(kinds["fewer_logged_requests"]) == len(PUBLISHED)


def _first_request_line(path) -> str:
    return next(line for line in path.read_text().splitlines() if "ReqTimeStats(rid=00128" in line)


def test_a_line_in_two_server_logs_is_counted_once(tmp_path):
    run = build_run(tmp_path, SCENARIO, **HALF)
    line = _first_request_line(run.prefill_log)
    other = run.server_log("prefill", 1)
    other.write_text(other.read_text() + line + "\n")
    summary = compute_summary(run, SCENARIO)
    kinds = _kinds(summary)
    assert list(kinds) == ["duplicate_reqstats"]
    (message,) = kinds["duplicate_reqstats"]
    rid = line.split("rid=")[1].split(",")[0]
    lines = len(other.read_text().splitlines())
    assert message.startswith(f"{other}: line {lines} repeats the request-stats line of rid={rid} in {run.prefill_log} "
                              "(line ")
    assert "(1 such line(s);" in message and message.endswith("each request was counted once")
    assert {r["transfer_samples"] for r in summary["rows"]} == {50}


def test_one_request_with_two_figures_in_two_logs_is_an_error_naming_both(tmp_path):
    run = build_run(tmp_path, SCENARIO, **HALF)
    line = _first_request_line(run.prefill_log)
    changed = line.replace("transfer_speed=", "transfer_speed=9")
    assert changed != line
    other = run.server_log("prefill", 1)
    other.write_text(other.read_text() + changed + "\n")
    kinds = _kinds(compute_summary(run, SCENARIO))
    (message,) = kinds["conflicting_reqstats"]
    rid = line.split("rid=")[1].split(",")[0]
    assert message.startswith(f"request rid={rid} is logged in {run.prefill_log} (line ")
    assert f"and in {other} (line " in message and "logs of different runs were mixed" in message


def test_merge_orders_requests_by_when_they_finished(tmp_path):
    head = "[{t} TP0] ReqTimeStats(rid={rid}, bootstrap_room=1, input_len=128, cached_input_len=0, output_len=1, type=prefill): "
    body = "queue_duration=0.41ms, forward_duration=120.00ms, transfer_speed=2.30 GB/s, transfer_total=4.70 MB, #retries=0"
    a, b = tmp_path / "prefill.log", tmp_path / "prefill-1.log"
    a.write_text("".join(head.format(t=t, rid=r) + body + "\n" for t, r in (("2026-07-15 10:00:01", "w"),
                                                                            ("2026-07-15 10:00:03", "c"))))
    b.write_text(head.format(t="2026-07-15 10:00:02", rid="b") + body + "\n")
    merged = merge_scans([parse_log(a), parse_log(b)])
    assert [s.rid for s in merged.stats] == ["w", "b", "c"]
    assert [p.name for p, _ in merged.located] == ["prefill.log", "prefill-1.log", "prefill.log"]
    assert (merged.duplicates, merged.conflicts) == ((), ())
