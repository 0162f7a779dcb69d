"""One reader, one writer: every file the bundle reads from a run folder or a stack record goes through
pdrepro.core.runfile (regular files only, a size cap per kind, logs streamed), and every file it writes goes
through pdrepro.core.safewrite (no link followed, nothing half-written). This test walks the package's syntax
tree and fails on any other way to open, read or write a file outside the named allowlists below, each with
why it may; an entry whose call site is gone fails the stale-entry test."""

from __future__ import annotations

import ast
import re
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
    "core/runfile.py::sha256": "the one reader's digest: streams a file of any size in blocks, never held whole",
    "core/safewrite.py::atomic": "the one writer (its temporary file)",
    "core/safewrite.py::open_log": "the one writer (a log a child writes into, O_NOFOLLOW)",
    # Writers that open a file they then write (not a read of a run file).
    "commands/offline_model.py::run": "writer: model.safetensors inside the command's own fresh private stage",
    "sweep/runlock.py::RunLock.__enter__": "the sweep's lock file, opened O_NOFOLLOW to flock, never read",
    # The host: /proc and sysfs are read through core.runfile.read_host (capped, no FIFO); only these remain.
    "launch/stack/lock.py::held": "the run folder itself, opened O_DIRECTORY to flock it, never read",
    "commands/__init__.py::_quiet_stdout": "/dev/null, put under a standard output its reader closed (never read)",
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
    "scenario/serverflags.py::table": "the package's own server flag lists (resources generated from upstream source)",
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
    "report/plots.py::png": "savefig into memory (a BytesIO); every report plot's bytes are written by "
                            "core.safewrite.write_file (plots.finish, and the A/B runner's ownoutputs.write_outputs)",
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
    assert "core/runfile.py::_open" in sites and "core/pins.py::parse_env_file" in sites, sorted(sites)


def test_no_file_is_read_but_through_the_one_reader_or_a_named_exception():
    stray = {site: calls for site, calls in _sites(READ_CALLS).items() if site not in READERS}
    assert not stray, ("read a run's files with pdrepro.core.runfile (read_json, read_text, lines: each with its "
                       f"kind's size cap), or name the site in READERS with why it is no run file: {stray}")


# A path under /proc or /sys named in a module's text (a default root, a file, a script it hands a shell).
_HOST_PATH = re.compile(r"(?:^|[\s\"'(={$:])/(?:proc|sys)(?:/|$|[\s\"')}])")


def _host_modules() -> dict[str, list[str]]:
    """Modules outside core naming a /proc or /sys path, and the read calls each makes itself."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if rel.startswith("core/"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        if any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _HOST_PATH.search(n.value)
               for n in ast.walk(tree)):
            found[rel] = [f"{where}: {name} at line {line}" for where, name, line in _calls(path) if name in READ_CALLS]
    return found


def test_no_module_outside_core_opens_proc_or_sys_itself():
    # A FIFO where an MTU belongs hung doctor, a 2.5 GiB one ended in a MemoryError: every read of the host's
    # kernel files goes through core.runfile.read_host (regular files only, at most its cap plus one byte read).
    modules = _host_modules()
    assert {"host/sysfs.py", "launch/stack/ownership.py", "sweep/provenance.py"} <= set(modules), sorted(modules)
    own = {m: calls for m, calls in modules.items() if calls}
    assert not own, f"read /proc and /sys through pdrepro.core.runfile.read_host (or read_host_bytes): {own}"


def test_no_file_is_written_but_through_the_one_writer_or_a_named_exception():
    stray = {site: calls for site, calls in _sites(WRITE_CALLS).items() if site not in WRITERS}
    assert not stray, ("write with pdrepro.core.safewrite (write_file, atomic, stage, open_log; the run's "
                       f"rundir.contract.write_atomic is the same), or name the site in WRITERS with why: {stray}")


def test_no_allowlist_entry_is_stale():
    # A site converted (or moved) leaves its entry behind: the lists name only what is still there.
    reads, writes = _sites(READ_CALLS), _sites(WRITE_CALLS)
    stale = sorted(set(READERS) - set(reads)) + sorted(set(WRITERS) - set(writes))
    assert not stale, f"remove these entries, their call sites are gone: {stale}"
