"""Reproduction gates: ``pytest repro/ --run-dir RUN`` judges a finished run;
``pytest repro/ --router URL ...`` runs ``pdrepro sweep`` first.

Every figure comes from ``pdrepro.verdicts.gates.evaluate`` on the summary
``pdrepro.kinds.registry.judged_summary`` makes in memory, the same code
behind ``pdrepro check``, so a gate and the command cannot disagree: a failed
check is a failed gate (a gate of its own, or ``test_no_other_check_failed``),
inputs the analysis calls unreadable end the suite with exit 2 as `check` does,
and nothing in the run is written: the JUnit file goes where pytest is told (``--junitxml FILE``; `pdrepro repro`,
which made the run, names RUN/junit.xml), and nowhere without one.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

DEFAULT_SCENARIO = "h20-qwen3-235b-1p1d"


def pytest_addoption(parser):
    g = parser.getgroup("pdrepro", "reproduction gates")
    g.addoption("--run-dir", help="run directory to judge (made by `pdrepro sweep`)")
    g.addoption("--router", help="router URL: run `pdrepro sweep` against it first (into --run-dir or runs/<time>)")
    g.addoption("--scenario", help=f"scenario name or YAML (default: the run's scenario.yaml, else {DEFAULT_SCENARIO})")
    g.addoption("--thresholds", help="YAML file of thresholds laid over the scenario's (keys it names win)")
    g.addoption("--sweep-args", default="", help='with --router: more `pdrepro sweep` flags, e.g. "--wait-timeout 60 --metrics"')
    for opt in ("--prefill", "--decode", "--model-path", "--dataset-path", "--image", "--logs-from", "--configuration"):
        g.addoption(f"--sweep-{opt[2:]}" if opt in ("--image", "--configuration") else opt,
                    help=f"with --router: passed to `pdrepro sweep {opt}`")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "kind(name): gate applies to scenarios of this kind only")
    run_dir, router = config.getoption("--run-dir"), config.getoption("--router")
    if not run_dir and not router:
        _bad_input(
            "repro gates need a run: pass --run-dir RUN (a finished `pdrepro sweep`), or --router URL with "
            "--prefill/--decode/--model-path/--dataset-path to run the sweep first")
    if router and getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        # Each xdist worker would run its own sweep against the one stack and run folder.
        _bad_input("--router runs the sweep once, in one process: drop -n (pytest-xdist), "
                                "or sweep first and judge the run with --run-dir and -n")
    if not run_dir:
        run_dir = str(Path("runs") / time.strftime("%Y%m%d-%H%M%S"))
        config.option.run_dir = run_dir
    if router is None and not Path(run_dir).is_dir():
        _bad_input(f"--run-dir {run_dir}: no such folder; give the run directory `pdrepro sweep --out` made")
    if router is None and config.getoption("--scenario") is None and not (Path(run_dir) / "scenario.yaml").is_file():
        # Judging a run by a scenario it may not have run with is allowed only when asked.
        _bad_input(f"--run-dir {run_dir}: has no scenario.yaml, so the scenario it ran with is unknown; pass "
                   f"--scenario NAME_OR_PATH (e.g. {DEFAULT_SCENARIO}) to judge it by one")
    if router is None:
        # Judge here, before any gate runs: bad input is exit 2 with one line, as `pdrepro check` says it.
        _judged(config)


def _bad_input(message: str) -> None:
    # pytest's own usage errors exit 4; the gates keep the CLI's promise: bad input or environment is 2.
    pytest.exit(f"pdrepro gates: error: {message}", returncode=2)


def _judged(config):
    """The run's summary, made once per process, in memory (judged_summary writes nothing into the run)."""
    from pdrepro.core.errors import UserError
    from pdrepro.kinds.registry import judged_summary
    from pdrepro.rundir import RunDir

    if not hasattr(config, "_pdrepro_judged"):
        try:
            config._pdrepro_judged = judged_summary(RunDir(Path(config.getoption("--run-dir"))), _scenario(config))
        except UserError as exc:
            _bad_input(str(exc))
    return config._pdrepro_judged


def pytest_sessionfinish(session, exitstatus):
    # Inputs the analysis calls incomplete or unreadable: exit 2 and their first line, as `pdrepro check` ends.
    judged = getattr(session.config, "_pdrepro_judged", None)
    if judged is None or hasattr(session.config, "workerinput"):
        return
    errors = judged.summary.input_errors()
    if errors:
        session.config._pdrepro_input_error = errors[0].message
        session.exitstatus = 2


def _scenario(config):
    from pdrepro.rundir import RunDir
    from pdrepro.scenario.model import resolve_scenario

    run_dir = Path(config.getoption("--run-dir"))
    spec = config.getoption("--scenario")
    if spec is None and not RunDir(run_dir).scenario_file.is_file():
        spec = DEFAULT_SCENARIO
    return resolve_scenario(spec, run_dir, config.getoption("--thresholds"))


def pytest_generate_tests(metafunc):
    if "prompt_len" in metafunc.fixturenames:
        scenario = _scenario(metafunc.config)
        metafunc.parametrize("prompt_len", list(scenario.sweep.prompt_lens), ids=lambda L: f"L{L}")


def pytest_collection_modifyitems(config, items):
    # Gates of the other scenario kind do not apply: deselect them (a skip would read as "not checked").
    kind = _scenario(config).kind
    keep, drop = [], []
    for item in items:
        marker = item.get_closest_marker("kind")
        (keep if marker is None or marker.args[0] == kind else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def scenario(pytestconfig):
    return _scenario(pytestconfig)


@pytest.fixture(scope="session")
def run(pytestconfig, scenario):
    from pdrepro.rundir import RunDir

    root = Path(pytestconfig.getoption("--run-dir"))
    if pytestconfig.getoption("--router"):
        _sweep(pytestconfig, root)
    return RunDir(root)


def _sweep(config, root: Path) -> None:
    # The pipeline's own sweep stage on the request `pdrepro repro` builds (its endpoints and folder from this suite's
    # options, --sweep-args read over them), with the sweep's analysis: this suite is the gates.
    from pdrepro.commands.requests import pipeline_sweep_request, run_sweep
    from pdrepro.core.errors import UserError
    from pdrepro.pipeline import split_words

    o = config.option
    try:
        sweep = pipeline_sweep_request(
            split_words(o.sweep_args, "--sweep-args"),
            missing_fix="no {flag}: the sweep needs it; pass `pytest repro {flag} ...` with --router",
            scenario=config.getoption("--scenario") or DEFAULT_SCENARIO, router=config.getoption("--router"),
            out=str(root), prefill=o.prefill, decode=o.decode, model_path=o.model_path, dataset_path=o.dataset_path,
            image=o.sweep_image, logs_from=o.logs_from, configuration=o.sweep_configuration,
            thresholds=config.getoption("--thresholds"))
    except UserError as exc:
        pytest.fail(f"pdrepro sweep not started: {exc}", pytrace=False)
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # the sweep's progress belongs on the terminal
        rc = run_sweep(sweep)
    if rc == 2:
        pytest.fail(f"pdrepro sweep stopped (exit 2); its message is above. Command: {sweep.command_line()}",
                    pytrace=False)
    if rc == 130:
        # Gates on a half-swept run would only list the lengths not reached yet.
        pytest.exit(f"pdrepro sweep interrupted; completed lengths are kept in {root}: run the same command again "
                    "to resume", returncode=130)


@pytest.fixture(scope="session")
def summary(run, pytestconfig):
    return _judged(pytestconfig).summary


@pytest.fixture(scope="session")
def checks(summary, scenario):
    from pdrepro.verdicts.gates import evaluate

    return evaluate(summary, scenario)


def pytest_terminal_summary(terminalreporter, config):
    # Not applicable is neither a pass nor a failure: say which gates it was and why, beside the counts.
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        terminalreporter.write_line(f"N/A (skipped, not passed) {report.nodeid.split('::')[-1]}: "
                                    f"{reason.removeprefix('Skipped: ')}")
    judged = getattr(config, "_pdrepro_judged", None)
    for note in judged.notes if judged is not None else []:
        terminalreporter.write_line(f"NOTE {note}")
    message = getattr(config, "_pdrepro_input_error", None)
    if message is not None:
        terminalreporter.write_line(f"pdrepro gates: error: {message}")
    run_dir = config.getoption("--run-dir")
    if run_dir and (config.getoption("--scenario") or config.getoption("--thresholds")):
        _bound_changes(terminalreporter, config, Path(run_dir))
    if run_dir:
        report = Path(run_dir) / "report.md"
        # The gates write nothing into the run: the report is analyze's, the JUnit file where --junitxml says.
        shown = report if report.is_file() else f"not written (`pdrepro analyze {run_dir}` writes {report})"
        junit = getattr(config.option, "xmlpath", None) or "not written (pass --junitxml FILE)"
        terminalreporter.write_line(f"report: {shown}   JUnit XML: {junit}")


def _bound_changes(terminalreporter, config, run_dir: Path) -> None:
    """Judged by other bounds than the run's own, as asked: say which (as `pdrepro check` does)."""
    from pdrepro.core.errors import UserError
    from pdrepro.rundir import RunDir
    from pdrepro.scenario.recorded import own_scenario
    from pdrepro.verdicts.bounds import bound_changes

    try:
        own = own_scenario(RunDir(run_dir))
    except UserError:
        return  # refused at configure time already
    if own is not None:
        for line in bound_changes(own, _scenario(config)):
            terminalreporter.write_line(f"BOUND {line}")
