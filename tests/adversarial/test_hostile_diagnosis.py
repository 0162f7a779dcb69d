"""`pdrepro diagnose` under any contents of the nodes' records a run may hold (RUN/nodes/<role>.json is a claim: a
copied, truncated, hand-edited or foreign file, a link, bytes that are no JSON, JSON of any shape, a doctor's
record with any status, detail or relaxed-ordering field).

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

from diagnosisbuild import base_run, split  # noqa: E402
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
