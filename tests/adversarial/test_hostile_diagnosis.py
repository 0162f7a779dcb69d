"""`pdrepro diagnose` under any contents of the nodes' records a run may hold (RUN/nodes/<role>.json is a claim: a
copied, truncated, hand-edited or foreign file, a link, bytes that are no JSON, JSON of any shape, a doctor's
record with any status, detail or relaxed-ordering field, and a record of the model itself whose facts are any
value: MTUs, GIDs, relaxed ordering, the knob, GPUs' links).

The promise: the diagnosis is made (no exception, exit 0); every share lies within [0, 1]; the causes are ranked by
share, largest first; each cause is answered once, as a finding, an unknown or ruled out (the three never share a
name); the output is the model it says it is; and nothing in the run is written."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "diagnosis"))

from diagnosisbuild import base_run, node_record, split  # noqa: E402
from runkinds import tree_hash  # noqa: E402

from pdrepro.diagnosis.causes.registry import names as cause_names  # noqa: E402
from pdrepro.diagnosis.diagnose import diagnose, render  # noqa: E402
from pdrepro.rundir.diagnosismodel import Diagnosis  # noqa: E402

_RUN: dict[str, object] = {}


def _run() -> Path:
    """One fixture run for the module (70/10/10/10 rails, so the rail cause is found too), its records cleared."""
    if "run" not in _RUN:
        import atexit
        import tempfile

        root = Path(tempfile.mkdtemp(prefix="pdrepro-diagnosis-"))
        atexit.register(shutil.rmtree, root, True)
        run = base_run(root / "r")
        split(run, (0.7, 0.1, 0.1, 0.1))
        _RUN["run"] = run.root
    root = _RUN["run"]
    shutil.rmtree(root / "nodes", ignore_errors=True)
    (root / "nodes").mkdir()
    return root


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
                    | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=20)
NAMES = st.sampled_from(["mtu", "gid", "gpu-nic-affinity", "relaxed-ordering", "pcie-relaxed-ordering"]) | st.text(max_size=12)
MTU_DETAIL = st.builds(lambda port, netdev, roce, tail: f"mlx5_{port}/1: ens{port} MTU {netdev} -> RoCE MTU {roce}{tail}",
                       st.integers(0, 9), st.integers(0, 10**12), st.integers(-5, 10**9), st.text(max_size=20))
CHECK = st.fixed_dictionaries({"name": NAMES, "status": st.sampled_from(["pass", "warn", "fail"]) | JSON,
                               "detail": MTU_DETAIL | st.text(max_size=60) | JSON, "fix": st.text(max_size=20) | JSON})
RECORD = st.fixed_dictionaries({"checks": st.lists(CHECK, max_size=6) | JSON, "line_rate_GB_s": JSON},
                               optional={"relaxed_ordering": JSON, "relaxed": JSON})
FILE = (RECORD.map(lambda r: json.dumps(r).encode()) | JSON.map(lambda v: json.dumps(v).encode())
        | st.binary(max_size=200) | st.just(b"") | st.just("link") | st.integers(2, 200_000).map(lambda n: b"[" * n)
        | st.integers(1, 50).map(lambda n: json.dumps({"relaxed_ordering": _nested(n)}).encode()))


def _nested(n: int) -> object:
    value: object = True
    for _ in range(n):
        value = {"ports": value}
    return value


def _write(root: Path, role: str, content: bytes | str) -> None:
    path = root / "nodes" / f"{role}.json"
    if content == "link":
        path.symlink_to(root / "summary.json" if (root / "summary.json").exists() else root / "scenario.yaml")
    else:
        path.write_bytes(content)  # type: ignore[arg-type]


@settings(max_examples=examples(20), deadline=None)
@given(prefill=st.none() | FILE, decode=st.none() | FILE)
def test_any_node_record_gives_a_diagnosis_in_bounds_ordered_and_disjoint(prefill, decode):
    root = _run()
    for role, content in (("prefill", prefill), ("decode", decode)):
        if content is not None:
            _write(root, role, content)
    before = tree_hash(root)
    d = diagnose(root)
    assert tree_hash(root) == before
    assert all(0.0 <= c.share <= 1.0 for c in d.causes) and all(0.0 <= g.fraction <= 1.0 for g in d.gaps)
    assert [c.share for c in d.causes] == sorted((c.share for c in d.causes), reverse=True)
    found, unknown, cleared = ({x.name for x in group} for group in (d.causes, d.unknown, d.cleared))
    assert not (found & unknown) and not (found & cleared) and not (unknown & cleared)
    assert found | unknown | cleared == set(cause_names())
    assert Diagnosis.model_validate_json(d.model_dump_json()) == d
    assert render(d)
    # The rails' counters are the run's own and untouched by the records: the skew is found whatever they hold.
    assert "rail skew" in found


def _model_record() -> dict:
    """A record as `doctor --out` writes it for a healthy H20 node, built once."""
    if "record" not in _RUN:
        import tempfile

        tree = Path(tempfile.mkdtemp(prefix="pdrepro-diagnosis-sys-"))
        _RUN["record"] = json.loads(node_record(tree / "sys", "prefill"))
        shutil.rmtree(tree, ignore_errors=True)
    return json.loads(json.dumps(_RUN["record"]))


ANY_INT = st.none() | st.integers(-(2**40), 2**40)
PORT_FACTS = st.fixed_dictionaries({}, optional={
    "active": st.booleans(), "active_mtu_bytes": ANY_INT, "netdev_mtu_bytes": ANY_INT, "gid_index": ANY_INT,
    "gid_reachable": st.none() | st.booleans(), "gid_type": st.none() | st.text(max_size=12),
    "netdev": st.none() | st.text(max_size=12)})
NIC_FACTS = st.fixed_dictionaries({}, optional={
    "relaxed_ordering": st.none() | st.booleans(), "numa_node": st.integers(-(2**40), 2**40),
    "pci_address": st.none() | st.text(max_size=16), "device": st.text(max_size=12),
    "relaxed_ordering_path": st.lists(st.fixed_dictionaries({"bdf": st.text(max_size=16),
                                                             "relaxed_ordering": st.none() | st.booleans(),
                                                             "note": st.text(max_size=30)}), max_size=3)})
GPU_FACTS = st.fixed_dictionaries({}, optional={"nic": st.none() | st.text(max_size=12),
                                                "nic_link": st.none() | st.text(max_size=8),
                                                "index": st.integers(-(2**40), 2**40)})


@settings(max_examples=examples(20), deadline=None)
@given(nics=st.lists(st.tuples(NIC_FACTS, st.lists(PORT_FACTS, max_size=2)), max_size=4),
       gpus=st.none() | st.lists(GPU_FACTS, max_size=8), knob=st.none() | st.text(max_size=4),
       drop=st.sampled_from([None, "nics", "software", "format", "gpus"]))
def test_a_record_of_the_model_with_any_facts_gives_a_diagnosis_in_bounds(nics, gpus, knob, drop):
    root = _run()
    record = _model_record()
    for (nic_facts, ports), nic in zip(nics, record["nics"]):
        nic.update(nic_facts)
        for port_facts, port in zip(ports, nic["ports"]):
            port.update(port_facts)
    record["gpus"] = None if gpus is None else [{**base, **facts} for base, facts in
                                                zip([{"index": i, "name": "GPU", "bus_id": f"0000:{i:02x}:00.0",
                                                      "nic": "mlx5_0", "nic_link": "PIX"} for i in range(8)], gpus)]
    record["relaxed_ordering_knob"] = knob
    if drop is not None:
        del record[drop]
    for role in ("prefill", "decode"):
        (root / "nodes" / f"{role}.json").write_text(json.dumps(record))
    before = tree_hash(root)
    d = diagnose(root)
    assert tree_hash(root) == before
    assert all(0.0 <= c.share <= 1.0 for c in d.causes) and all(0.0 <= g.fraction <= 1.0 for g in d.gaps)
    found, unknown, cleared = ({x.name for x in group} for group in (d.causes, d.unknown, d.cleared))
    assert found | unknown | cleared == set(cause_names()) and not (found & unknown)
    if drop in ("nics", "software", "format"):
        # Not the model: every cause that reads only the records is unknown, with the file named.
        mtu = next(u for u in d.unknown if u.name == "mtu")
        assert "nodes/prefill.json" in mtu.missing
    assert render(d)
