"""doctor's memlock advice follows how the running dockerd was started, read from /proc-shaped trees:
a systemd service gets a LimitMEMLOCK drop-in, a daemon started by hand a restart under a raised limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pdrepro.fabric import dockerd, doctor, limits

EIGHT_MIB = 8 * 2**20
NO_SYS_RESOURCE = "000001fffeffffff"  # every capability but bit 24: a dockerd inside a container
ALL_CAPS = "000001ffffffffff"


def proc_tree(root: Path, *, pid: int = 812, cap_eff: str = NO_SYS_RESOURCE, cgroup: str | None = None,
              ppid: int | None = None, parent_comm: str = "systemd", hard: str = "8388608") -> Path:
    """A /proc holding one dockerd (and its parent when PPID is given), files as the kernel prints them."""
    me = root / str(pid)
    me.mkdir(parents=True)
    (me / "comm").write_text("dockerd\n")
    (me / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        f"Max locked memory         {hard:<20} {hard:<20} bytes     \n")
    status = f"Name:\tdockerd\nPid:\t{pid}\n"
    if ppid is not None:
        status += f"PPid:\t{ppid}\n"
        (root / str(ppid)).mkdir(exist_ok=True)
        (root / str(ppid) / "comm").write_text(parent_comm + "\n")
    (me / "status").write_text(status + "Uid:\t0\t0\t0\t0\n" + f"CapEff:\t{cap_eff}\n")
    if cgroup is not None:
        (me / "cgroup").write_text(cgroup)
    return root


def _memlock(proc: Path, tmp_path: Path) -> doctor.Check:
    (tmp_path / "sys").mkdir(exist_ok=True)
    ctx = doctor.Context(sysfs_root=tmp_path / "sys", role="prefill", memlock=(EIGHT_MIB, EIGHT_MIB), proc_root=proc)
    return doctor.check_memlock(ctx, doctor.Facts(devices=[]))


SYSTEMD_V2 = "0::/system.slice/docker.service\n"
SYSTEMD_V1 = ("12:pids:/system.slice/docker.service\n4:memory:/system.slice/docker.service\n"
              "1:name=systemd:/system.slice/docker.service\n")
SNAP = "0::/system.slice/snap.docker.dockerd.service\n"
SESSION = "0::/user.slice/user-0.slice/session-3.scope\n"  # started from a login shell, then orphaned to PID 1
CONTAINER = "0::/\n"  # the root cgroup of a container's namespace


@pytest.mark.parametrize(("cgroup", "unit"), [(SYSTEMD_V2, "docker.service"), (SYSTEMD_V1, "docker.service"),
                                             (SNAP, "snap.docker.dockerd.service")])
def test_a_systemd_engine_gets_the_drop_in(tmp_path, cgroup, unit):
    c = _memlock(proc_tree(tmp_path / "proc", cgroup=cgroup, ppid=1), tmp_path)
    assert c.status == "fail" and "8 MiB" in c.detail
    assert f"systemctl edit {unit}" in c.fix and "LimitMEMLOCK=infinity" in c.fix
    assert "ulimit" not in c.fix and "started by hand" not in c.fix


@pytest.mark.parametrize("cgroup", [SESSION, CONTAINER])
def test_an_engine_started_by_hand_gets_a_restart_under_a_raised_limit(tmp_path, cgroup):
    # Reparented to PID 1 (systemd) after its shell left: the cgroup, not the parent, says who started it.
    c = _memlock(proc_tree(tmp_path / "proc", pid=4242, cgroup=cgroup, ppid=1), tmp_path)
    assert c.status == "fail"
    assert "started by hand" in c.fix and "pid 4242" in c.fix and "ulimit -l unlimited" in c.fix
    assert ".ci/docker-engine.sh" in c.fix
    assert "LimitMEMLOCK" not in c.fix and "systemctl" not in c.fix


def test_without_a_cgroup_file_the_parent_decides(tmp_path):
    by_systemd = dockerd.find(proc_tree(tmp_path / "a", ppid=1, parent_comm="systemd"))
    by_shell = dockerd.find(proc_tree(tmp_path / "b", ppid=77, parent_comm="bash"))
    assert by_systemd is not None and by_systemd.unit == "docker.service"
    assert by_shell is not None and by_shell.unit is None


def test_an_engine_that_can_raise_limits_needs_no_engine_fix(tmp_path):
    c = _memlock(proc_tree(tmp_path / "proc", cap_eff=ALL_CAPS, cgroup=SESSION), tmp_path)
    assert c.status == "warn" and "can grant it" in c.detail
    assert "LimitMEMLOCK" not in c.fix and "started by hand" not in c.fix


def test_hostile_proc_files_are_read_as_nothing_proven(tmp_path):
    proc = proc_tree(tmp_path / "proc", cap_eff="zz-not-hex", cgroup="x" * (dockerd.READ_LIMIT * 4))
    engine = dockerd.find(proc)
    # A mangled capability mask proves no CAP_SYS_RESOURCE; a cgroup file past any real size names no unit.
    assert engine is not None and engine.can_raise_limits is False and engine.unit is None
    assert limits.engine_memlock_cap(proc) == "8388608"
    assert dockerd.find(tmp_path / "empty") is None
    assert limits.engine_memlock_cap(proc_tree(tmp_path / "u", hard="unlimited")) is None


def test_the_fix_names_the_bundles_script_and_it_raises_the_limit():
    # The advice sends a by-hand engine to the script; the script must do what the advice says.
    script = (Path(__file__).resolve().parents[2] / ".ci" / "docker-engine.sh").read_text()
    start = script[script.index("start_daemon()"):]
    assert start.index("ulimit -l") < start.index("dockerd >"), "the script must raise the limit before dockerd starts"
