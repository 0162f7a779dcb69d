"""One reader, one writer: every file the bundle reads from a run folder or a stack record goes through
pdrepro.core.runfile (regular files only, a size cap per kind, logs streamed), and every file it writes goes
through pdrepro.core.safewrite (no link followed, nothing half-written). This test walks the package's syntax
tree and fails on any other way to open, read or write a file outside the named allowlists below, each with
why it may; an entry whose call site is gone fails the stale-entry test."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pdrepro"

# The ways to read a file's bytes: open() / Path.open / os.open / io.open, os.fdopen, Path.read_text and
# read_bytes, json.load. Calls on the reader and the writer modules themselves are theirs.
READ_CALLS = {"open", "fdopen", "read_text", "read_bytes", "json.load"}
WRITE_CALLS = {"write_text", "write_bytes", "savefig"}
OWN = {"runfile", "safewrite"}

READERS = {
    # The reader and the writer themselves.
    "core/runfile.py::_open": "the one reader",
    "core/safewrite.py::atomic": "the one writer (its temporary file)",
    "core/safewrite.py::open_log": "the one writer (a log a child writes into, O_NOFOLLOW)",
    # Writers that open a file they then write (not a read of a run file).
    "commands/offline_model.py::run": "writer: model.safetensors inside the command's own fresh private stage",
    "sweep/runlock.py::RunLock.__enter__": "the sweep's lock file, opened O_NOFOLLOW to flock, never read",
    # The host: /proc and sysfs, read by their own readers (small kernel files, never a run's).
    "host/sysfs.py::_read": "sysfs attributes (host access)",
    "fabric/counters.py::_read": "sysfs port counters of the NICs",
    "fabric/capture.py::_Copier.copy": "copies a sysfs tree (the capture tool's source is sysfs)",
    "fabric/capture.py::capture": "sysfs PCI vendor and class attributes",
    "fabric/dockerd.py::_read": "/proc/PID files of the Docker engine (how it was started, its limits)",
    "launch/stack/ownership.py::boot_id": "/proc/sys/kernel/random/boot_id",
    "sweep/provenance.py::boot_id": "/proc/sys/kernel/random/boot_id of the sweep host, for provenance",
    "launch/stack/ownership.py::stat": "/proc/PID/stat",
    "launch/stack/ownership.py::_proc_bytes": "/proc/PID/cmdline and environ",
    "launch/stack/ownership.py::comm": "/proc/PID/comm",
    "launch/stack/ownership.py::listening_inodes": "/proc/net/tcp and tcp6",
    "launch/stack/lock.py::held": "the run folder itself, opened O_DIRECTORY to flock it, never read",
    "smoke/memory.py::memory_peak": "cgroup memory files and /proc/self/status",
    "image/versions.py::cuda_toolkit": "the CUDA toolkit's version.json on the host",
    "image/versions.py::nvidia_driver": "/proc/driver/nvidia/version",
    "image/versions.py::kernel_module": "/sys/module/NAME/version",
    # The repository's own build inputs and the package's resources (not a run's).
    "core/pins.py::parse_env_file": "versions.env, the repository's pins",
    "launch/targets/templating.py::template": "the package's own job-file templates (resources, not a run's)",
    "image/build_inputs.py::check_locks": "the repository's GPU lock files",
    "image/build_inputs.py::check_sources": "the build's source stamp",
    "image/build_inputs.py::check_wheelhouse": "the repository's GPU lock file",
    "image/gpulock.py::read_requirements_in": "the repository's requirements.in",
    "image/gpulock.py::lock_problems": "the repository's lock file",
    "analysis/whatran.py::_locked_torch": "the repository's GPU lock (beside versions.env), not a run file",
    "launch/targets/slurm.py::render": "a resource of the package (slurm_runtime.sh)",
    "scenario/knobs.py::_load": "the package's own knob lists (resources generated from upstream source)",
    "tune/slurm.py::_template": "the package's own job-array template (a resource, not a run's)",
    # Inputs people give on the command line, each validated by its own loader (not a run folder's file).
    "scenario/kvsize.py::geometry_from_config": "a model's config.json named by a scenario",
    "scenario/site.py::check_ib_devices": "the site's ib_devices.json given to render",
    "fabric/checks/inputs.py::check_model": "the model's config.json given to doctor",
    "fabric/checks/inputs.py::check_dataset": "the first bytes of the dataset given to doctor",
    "launch/targets/compose.py::ComposeTarget.render": "the ib_devices.json given to render, copied into --out",
    "launch/targets/k8s.py::K8sTarget.render": "the scenario file given to render (load_scenario read it first)",
    # Run files read in code other branches of issue 22 were changing: to go through core.runfile.
}

WRITERS = {
    "smoke/plot.py::_save": "savefig into memory (a BytesIO); the PNG is written by core.safewrite.write_file",
    "report/plots.py::finish": "savefig into memory (a BytesIO); the PNG is written by core.safewrite.write_file",
}


def _calls(path: Path) -> list[tuple[str, str, int]]:
    """(enclosing class.function, call, line) of each file call in ``path``."""
    found: list[tuple[str, str, int]] = []
    scope: list[str] = []

    class Visitor(ast.NodeVisitor):
        def _scoped(self, node) -> None:
            scope.append(node.name)
            self.generic_visit(node)
            scope.pop()

        visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

        def visit_Call(self, node: ast.Call) -> None:
            func, name = node.func, None
            if isinstance(func, ast.Name) and func.id == "open":
                name = "open"
            elif isinstance(func, ast.Attribute):
                owner = func.value.id if isinstance(func.value, ast.Name) else None
                if owner == "json" and func.attr == "load":
                    name = "json.load"
                elif owner not in OWN and func.attr in READ_CALLS | WRITE_CALLS:
                    name = func.attr
            if name is not None:
                found.append((".".join(scope) or "<module>", name, node.lineno))
            self.generic_visit(node)

    Visitor().visit(ast.parse(path.read_text(), str(path)))
    return found


def _sites(kinds: set[str]) -> dict[str, list[str]]:
    sites: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for where, name, line in _calls(path):
            if name in kinds:
                sites.setdefault(f"{path.relative_to(PACKAGE)}::{where}", []).append(f"{name} at line {line}")
    return sites


def test_the_walk_finds_what_it_looks_for():
    # A walk that finds nothing would pass everything: the reader's own open and a known /proc read are seen.
    sites = _sites(READ_CALLS)
    assert "core/runfile.py::_open" in sites and "launch/stack/ownership.py::boot_id" in sites, sorted(sites)


def test_no_file_is_read_but_through_the_one_reader_or_a_named_exception():
    stray = {site: calls for site, calls in _sites(READ_CALLS).items() if site not in READERS}
    assert not stray, ("read a run's files with pdrepro.core.runfile (read_json, read_text, lines: each with its "
                       f"kind's size cap), or name the site in READERS with why it is no run file: {stray}")


def test_no_file_is_written_but_through_the_one_writer_or_a_named_exception():
    stray = {site: calls for site, calls in _sites(WRITE_CALLS).items() if site not in WRITERS}
    assert not stray, ("write with pdrepro.core.safewrite (write_file, atomic, stage, open_log; the run's "
                       f"rundir.contract.write_atomic is the same), or name the site in WRITERS with why: {stray}")


def test_no_allowlist_entry_is_stale():
    # A site converted (or moved) leaves its entry behind: the lists name only what is still there.
    reads, writes = _sites(READ_CALLS), _sites(WRITE_CALLS)
    stale = sorted(set(READERS) - set(reads)) + sorted(set(WRITERS) - set(writes))
    assert not stale, f"remove these entries, their call sites are gone: {stale}"
