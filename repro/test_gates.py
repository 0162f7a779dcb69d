"""The gates a reproduction must pass, one test per prompt length and figure.

A failure message names the length, the figure with its unit and the bound.
A check that does not apply to the run (the transport and the NIC witness
under a scenario's ``transport: any`` on a node without RDMA devices) is a
skip with the check's reason: pytest's summary line and the JUnit XML count it
as skipped, never as passed, and the conftest lists each one at the end. A gate
is a view of ``evaluate``'s checks and nothing more: a check that the run does
not get (the smoke has no TTFT, so no transport or NIC check) is a skip naming
why, and a failed check no gate names fails ``test_no_other_check_failed``, so
the gates and `pdrepro check` reach the same verdict.
"""

import pytest

pytestmark_sweep = pytest.mark.kind("kv-sweep")


def _require(ok, message):
    # A gate's message is the whole story (length, figure, bound): no traceback around it.
    if not ok:
        pytest.fail(message, pytrace=False)


def _for(checks, name, prompt_len=None):
    return [c for c in checks if c.name == name and (prompt_len is None or c.prompt_len == prompt_len)]


def _present(checks, prompt_len):
    present = _for(checks, "length_present", prompt_len)
    _require(present and present[0].passed, present[0].detail if present else f"length {prompt_len}: not in the run")


# Every check a gate below names; a failed check of any other name fails test_no_other_check_failed.
GATED = {"length_present", "min_bandwidth", "max_ttft", "max_transfer_share", "completed", "request_errors",
         "requests_logged", "output_tokens", "nic_witness", "nic_within_line_rate", "rail_share", "rail_within_line_rate",
         "port_baseline_alone", "port_baseline_together",
         "bandwidth_within_line_rate",
         "ttft_positive", "ttft_covers_transfer", "kv_size_match", "peak_bandwidth", "peak_utilization",
         "logs_readable", "length_expected", "transport", "pins_match", "provenance_present", "configuration_present"}


def _gate(checks, name, prompt_len=None, required=True):
    if prompt_len is not None:
        _present(checks, prompt_len)
    found = _for(checks, name, prompt_len)
    if not found and required:
        # `pdrepro check` draws no such check for this run either (the smoke has no TTFT, no transport proof):
        # not judged, and said so (a skip, never a pass).
        where = f"length {prompt_len}: " if prompt_len is not None else ""
        pytest.skip(f"{where}{name}: not judged: the run gets no such check (not measured)")
    bad = [c.detail for c in found if c.applicable and not c.passed]
    _require(not bad, "; ".join(bad))
    idle = [c.detail for c in found if not c.applicable]
    if idle:
        pytest.skip("; ".join(idle))


@pytestmark_sweep
def test_bandwidth(checks, scenario, prompt_len):
    _gate(checks, "min_bandwidth", prompt_len, required=prompt_len in scenario.thresholds.min_bandwidth_GB_s)


@pytestmark_sweep
def test_ttft(checks, scenario, prompt_len):
    _gate(checks, "max_ttft", prompt_len, required=prompt_len in scenario.thresholds.max_ttft_ms)


@pytestmark_sweep
def test_transfer_share(checks, scenario, prompt_len):
    _gate(checks, "max_transfer_share", prompt_len, required=scenario.thresholds.max_transfer_share_pct is not None)


@pytestmark_sweep
def test_all_prompts_completed(checks, prompt_len):
    _gate(checks, "completed", prompt_len)


@pytestmark_sweep
def test_no_request_errors(checks, prompt_len):
    _gate(checks, "request_errors", prompt_len)


@pytestmark_sweep
def test_requests_logged(checks, prompt_len):
    """The servers' logs hold every request the client completed: else the figures are not the run's."""
    _gate(checks, "requests_logged", prompt_len)


@pytestmark_sweep
def test_outputs_generated(checks, prompt_len):
    """HTTP 200 is not success: each request must have generated the tokens it asked for."""
    _gate(checks, "output_tokens", prompt_len)


@pytestmark_sweep
def test_nics_witness_the_kv(checks, prompt_len):
    """The RDMA ports' own byte counters must show the KV the model says was sent, within the line rate."""
    _gate(checks, "nic_witness", prompt_len)
    _gate(checks, "nic_within_line_rate", prompt_len, required=False)


@pytestmark_sweep
def test_each_rail_carries_its_share(checks, prompt_len):
    """Each RDMA port ib_devices.json names for the GPUs in use carries its share of the KV (at least
    thresholds.min_rail_share of the mean per rail) within its own line rate; the failing rail is named."""
    _gate(checks, "rail_share", prompt_len, required=False)
    _gate(checks, "rail_within_line_rate", prompt_len, required=False)


@pytestmark_sweep
def test_each_port_reaches_its_line_rate_in_the_baseline(checks):
    """Where the run holds `pdrepro baseline`'s figures: each port at least thresholds.min_port_baseline_fraction
    of its own line rate, alone and with all ports at once; the port that falls short is named."""
    _gate(checks, "port_baseline_alone", required=False)
    _gate(checks, "port_baseline_together", required=False)


@pytestmark_sweep
def test_plausible(checks, prompt_len):
    """Figures that cannot be true: above line rate, TTFT not positive or shorter than the KV transfer, KV size
    off the model's."""
    _present(checks, prompt_len)
    for name in ("bandwidth_within_line_rate", "ttft_positive", "ttft_covers_transfer", "kv_size_match"):
        _gate(checks, name, prompt_len, required=False)


@pytestmark_sweep
def test_peak_bandwidth(checks, scenario):
    _gate(checks, "peak_bandwidth", required=scenario.thresholds.min_peak_bandwidth_GB_s is not None)


@pytestmark_sweep
def test_peak_utilization(checks, scenario):
    _gate(checks, "peak_utilization", required=scenario.thresholds.min_peak_utilization_pct is not None)


@pytestmark_sweep
def test_logs_readable(checks):
    _gate(checks, "logs_readable")


@pytestmark_sweep
def test_no_unexpected_lengths(checks):
    _gate(checks, "length_expected", required=False)


@pytestmark_sweep
def test_transport_proven(checks):
    """rdma scenarios: the sweep's proof; transport any: what the servers' logs show the engines used."""
    _gate(checks, "transport")


@pytestmark_sweep
def test_engine_ceiling_not_contradicted(checks):
    """Where the run holds the engine alone on its box: no request moved its KV well above it."""
    _gate(checks, "engine_ceiling", required=False)


@pytestmark_sweep
def test_pins_match(checks, scenario):
    """A reproduction runs the pinned software (scenario pins_match: gate); warn leaves it to the report."""
    if scenario.pins_match == "warn":
        pytest.skip("pins_match: warn in the scenario: what differs from docker/versions.env is a warning in "
                    "the report and in `pdrepro check`, not a gate")
    _gate(checks, "pins_match", required=False)


def test_provenance_present(checks):
    """A sweep's run records the pins, host, environment, scenario and endpoints it ran with."""
    _gate(checks, "provenance_present")


def test_no_other_check_failed(checks):
    """Any check `pdrepro check` fails that no gate above names fails here: the two never disagree."""
    other = [c.detail for c in checks if c.name not in GATED and c.applicable and not c.passed]
    _require(not other, "; ".join(other))


@pytest.mark.kind("comparison")
def test_comparison_configurations_measured(checks):
    _gate(checks, "configuration_present")


@pytest.mark.kind("comparison")
def test_comparison_completed(checks):
    _gate(checks, "completed")


@pytest.mark.kind("comparison")
def test_comparison_no_request_errors(checks):
    _gate(checks, "request_errors")
