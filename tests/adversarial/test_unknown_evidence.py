"""Unknown evidence never passes: whatever an MTU file holds, wherever in time a length's counters were read, and
whatever mix of backends' start-up lines the server logs hold, a check that rests on evidence the run cannot
vouch for is FAIL (or a warning where no scenario requires it), never PASS and never "not applicable".

* MTU files: any text that is not the kernel's decimal digits (a word, nothing, signs, separators, other scripts'
  digits, bytes that are no UTF-8) leaves doctor's MTU check not measured, which fails a published-run node;
* counter readings: a length's readings moved anywhere in time clear of its requests leave the NIC witness not
  measured, which fails a scenario on a fabric, and `pdrepro check` exits 1;
* mixed logs: a run read through one backend whose logs also hold RDMA lines of another is never "not applicable:
  no RDMA device", on a box whose own lists say it has none.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from clihelp import pdrepro
from depth import examples
from fakecluster import mooncake_startup
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from runbuilder import build_run, sweep_provenance
from sysfs_builder import h20_node

from pdrepro.analysis.summarize import compute_summary
from pdrepro.analysis.transport_evidence import transport_facts
from pdrepro.backends import backend
from pdrepro.fabric import doctor
from pdrepro.rundir import RunDir
from pdrepro.scenario.model import load_scenario
from pdrepro.verdicts.gates import evaluate

PUBLISHED = load_scenario("h20-qwen3-235b-1p1d")
ONEBOX = load_scenario("onebox-qwen25-0.5b")
_CACHE: dict[str, object] = {}


def _tmp(name: str) -> Path:
    import atexit
    import tempfile

    if name not in _CACHE:
        root = Path(tempfile.mkdtemp(prefix=f"pdrepro-unknown-{name}-"))
        atexit.register(shutil.rmtree, root, True)
        _CACHE[name] = root
    return _CACHE[name]  # type: ignore[return-value]


# MTU file contents ------------------------------------------------------------------------------------------

NOT_DIGITS = st.one_of(
    st.sampled_from(["jumbo", "", " ", "\n", "9000 bytes", "+9000", "-1", "9_000", "0x2328", "٩٠٠٠", "9000.0",
                     "1e4", "infinity", "9000\n9000"]),
    st.text(max_size=24).filter(lambda t: not re.fullmatch(r"[0-9]+", t.strip())),
).map(str.encode) | st.binary(max_size=24).filter(lambda b: not re.fullmatch(rb"\s*[0-9]+\s*", b))


def _node() -> Path:
    root = _tmp("sys") / "sys"
    if not root.exists():
        h20_node(root)
    return root


@settings(max_examples=examples(25))
@given(content=NOT_DIGITS, port=st.integers(0, 3))
def test_an_mtu_file_that_is_no_number_never_passes(content, port):
    root = _node()
    mtu = root / "class" / "net" / f"ens{10 + port}np0" / "mtu"
    try:
        mtu.write_bytes(content)
        published = doctor.Context(sysfs_root=root, role="prefill", scenario=PUBLISHED, env={}, dev_dir=None)
        check = doctor.check_mtu(published, doctor.gather(published))
        assert check.status == "fail" and f"mlx5_{port}/1: netdev MTU not measured" in check.detail
        laptop = doctor.Context(sysfs_root=root, role=None, scenario=ONEBOX, env={}, dev_dir=None)
        assert doctor.check_mtu(laptop, doctor.gather(laptop)).status == "warn"
    finally:
        mtu.write_text("9000\n")


# Counter readings placed in time ---------------------------------------------------------------------------------

def _run() -> RunDir:
    """One fixture run of the published scenario (the witness passes on it), its counters kept pristine."""
    base = _tmp("run")
    run = RunDir(base / "r")
    if not (base / "pristine").exists():
        build_run(run.root, PUBLISHED, provenance=sweep_provenance(PUBLISHED))
        shutil.copytree(run.counters_dir, base / "pristine")
    shutil.rmtree(run.counters_dir)
    shutil.copytree(base / "pristine", run.counters_dir)
    return run


DAY = 86400.0


@settings(max_examples=examples(8))
@given(length=st.sampled_from(PUBLISHED.sweep.prompt_lens), after=st.booleans(),
       gap=st.floats(min_value=3.0, max_value=30 * DAY, allow_nan=False), stretch=st.floats(0.1, 10.0))
def test_counters_read_clear_of_the_requests_never_pass(length, after, gap, stretch):
    run = _run()
    path = run.counters_file(length)
    record = json.loads(path.read_text())
    nodes = record["nodes"]
    t0 = min(n["before"]["at"] for n in nodes.values())
    t1 = max(n["after"]["at"] for n in nodes.values())
    # A window of any length that ends GAP seconds before the requests began, or starts GAP after they ended.
    span = (t1 - t0) * stretch
    start = t1 + gap if after else t0 - gap - span
    for node in nodes.values():
        node["before"]["at"], node["after"]["at"] = start, start + span
    path.write_text(json.dumps(record))
    results = evaluate(compute_summary(run, PUBLISHED), PUBLISHED)
    witness = next(r for r in results if r.name == "nic_witness" and r.prompt_len == length)
    assert witness.verdict == "FAIL" and "not measured" in witness.detail
    others = [r for r in results if r.name == "nic_witness" and r.prompt_len != length]
    assert others and all(r.verdict == "PASS" for r in others)  # the rest of the run still witnesses its KV


def test_check_exits_1_on_counters_read_a_day_early():
    run = _run()
    path = run.counters_file(PUBLISHED.sweep.prompt_lens[0])
    record = json.loads(path.read_text())
    for node in record["nodes"].values():
        node["before"]["at"] -= DAY
        node["after"]["at"] -= DAY
    path.write_text(json.dumps(record))
    result = pdrepro("check", run.root)
    assert result.rc == 1 and "NIC byte counts not measured" in result.out
    (run.root / "summary.json").unlink(missing_ok=True)


# Mixed backends' start-up lines -------------------------------------------------------------------------------

START = "[2026-12-01 10:00:00] server_args=ServerArgs(disaggregation_mode='{role}')\n"
NIXL_TCP = ["[2026-12-01 10:00:01] NIXL KVManager initialized with backend: UCX",
            "[1764583200.0] [host:1:0] ucp_worker.c:2041 UCX  INFO  ep cfg#2 rma_am(tcp/lo) am(tcp/lo tcp/eth0)"]
NIXL_RDMA = ["[2026-12-01 10:00:01] NIXL KVManager initialized with backend: UCX",
             "[1764583200.0] [host:1:0] ucp_worker.c:2041 UCX  INFO  ep cfg#2 rma_am(rc_mlx5/mlx5_0:1) "
             "am(rc_mlx5/mlx5_0:1)"]
# Blocks of lines each backend logs, by what they say of RDMA.
BLOCKS = {"nixl": {"tcp": NIXL_TCP, "rdma": NIXL_RDMA},
          "mooncake": {"tcp": mooncake_startup("tcp"), "force-tcp": mooncake_startup("force-tcp"),
                       "rdma": mooncake_startup("rdma", nics=2)}}
NO_DEVICE_HOST = {"host": {"hostname": "box", "nics": {}},
                  "endpoints": {"prefill": "http://127.0.0.1:30000", "decode": "http://127.0.0.1:30001"}}
RUN_BACKENDS = {"nixl": "nixl", "mooncake_tcp": "mooncake"}  # a run's backend -> the family whose lines it reads


def _verdict(used, evidence) -> str:
    summary = {"schema_version": 1, "source": "sglang", "transport": used, "transport_evidence": evidence,
               "rows": [], "issues": [], "scenario": ONEBOX.to_dict(), "scenario_fingerprint": ONEBOX.fingerprint}
    return next(r.verdict for r in evaluate(summary, ONEBOX) if r.name == "transport")


@settings(max_examples=examples(20))
@given(run_backend=st.sampled_from(sorted(RUN_BACKENDS)),
       blocks=st.lists(st.tuples(st.sampled_from(sorted(BLOCKS)), st.sampled_from(["tcp", "rdma", "force-tcp"])),
                       min_size=1, max_size=4),
       role=st.sampled_from(["prefill", "decode"]))
def test_another_backends_rdma_lines_are_never_not_applicable(run_backend, blocks, role):
    own = RUN_BACKENDS[run_backend]
    blocks = [(family, what) for family, what in blocks if what in BLOCKS[family]]
    foreign_rdma = any(family != own and what == "rdma" for family, what in blocks)
    assume(foreign_rdma)
    root = _tmp("mixed") / "run"
    shutil.rmtree(root, ignore_errors=True)
    (root / "logs").mkdir(parents=True)
    # The run's own backend says TCP in both logs; the other backend's lines land in one of them.
    for r in ("prefill", "decode"):
        lines = list(BLOCKS[own]["tcp"])
        if r == role:
            for family, what in blocks:
                lines += BLOCKS[family][what]
        (root / "logs" / f"{r}.log").write_text(START.format(role=r) + "\n".join(lines) + "\n")
    used, evidence = transport_facts(RunDir(root), NO_DEVICE_HOST, backend(run_backend))
    assert evidence["rdma_devices"]["found"] is not False
    assert any(c.startswith(f"{role}.log:") for c in evidence["conflicts"])
    assert _verdict(used, evidence) == "FAIL"
