"""Hostile /proc trees for doctor's memlock check: whatever a dockerd's comm, status, limits and cgroup
files hold (binary, huge, mangled, missing), doctor gives one memlock row with one fix, never a traceback,
and writes nothing into the tree it reads."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pdrepro.fabric import dockerd, doctor

# The faults fixed: a cgroup line naming a unit the parser must find among noise, a CapEff that is not hex,
# a limits line cut short, files far past /proc's sizes, bytes that are not UTF-8.
TEXT = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.sampled_from(["0::/system.slice/docker.service\n", "0::/\n", "12:pids:/user.slice/session-3.scope\n",
                     "0::/system.slice/snap.docker.dockerd.service/x\n", "0::/a.service.bak\n", ""]),
    st.integers(1, 4).map(lambda n: "0::/" + "x" * (dockerd.READ_LIMIT * n)),
)
STATUS = st.one_of(TEXT, st.builds(lambda cap, uid, ppid: f"Uid:\t{uid}\t0\t0\t0\nCapEff:\t{cap}\nPPid:\t{ppid}\n",
                                   st.sampled_from(["000001ffffffffff", "000001fffeffffff", "zz", "", "-1"]),
                                   st.sampled_from(["0", "1000", "x", ""]), st.sampled_from(["1", "0", "abc", ""])))
LIMITS = st.one_of(TEXT, st.sampled_from(["Max locked memory 8388608 8388608 bytes\n", "Max locked memory\n",
                                          "Max locked memory         unlimited            unlimited            bytes\n"]))


def _tree(root: Path, comm: str, status: str | None, limits: str | None, cgroup: str | None) -> Path:
    me = root / "812"
    me.mkdir(parents=True, exist_ok=True)
    (me / "comm").write_text(comm, encoding="utf-8", errors="surrogateescape")
    for name, text in (("status", status), ("limits", limits), ("cgroup", cgroup)):
        if text is not None:
            (me / name).write_text(text, encoding="utf-8", errors="surrogateescape")
    (root / "1").mkdir(exist_ok=True)
    (root / "1" / "comm").write_text("systemd\n")
    return root


def _snapshot(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in root.rglob("*")}


@given(comm=st.sampled_from(["dockerd\n", "dockerd", "docker\n", ""]), status=st.none() | STATUS,
       limits=st.none() | LIMITS, cgroup=st.none() | TEXT)
def test_hostile_proc_gives_one_memlock_row_and_one_fix(tmp_path_factory, comm, status, limits, cgroup):
    root = _tree(tmp_path_factory.mktemp("proc"), comm, status, limits, cgroup)
    before = _snapshot(root)
    engine = dockerd.find(root)
    assert engine is None or engine.unit is None or engine.unit.endswith(".service")
    sysfs = root.parent / "sys"
    sysfs.mkdir(exist_ok=True)
    ctx = doctor.Context(sysfs_root=sysfs, role="prefill", memlock=(8 * 2**20, resource.RLIM_INFINITY),
                         proc_root=root)
    check = doctor.check_memlock(ctx, doctor.Facts(devices=[]))
    assert check.status in ("warn", "fail")
    # One fix: never both the systemd drop-in and the by-hand restart.
    assert not ("LimitMEMLOCK" in check.fix and "started by hand" in check.fix)
    assert _snapshot(root) == before and os.access(root, os.R_OK)
