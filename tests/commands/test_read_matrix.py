"""Every read command on every run the bundle writes (issue 22, item 10; item 9's read-only verdicts).

`pdrepro analyze`, `pdrepro check` and the gates (`pytest repro/`) on a smoke run, a sweep run, a one-box
run and each recorded run (copied): each works or refuses with one line (exit 2, no traceback); check and the
gates reach the same exit status; neither changes a byte of the run (every file hashed before and after);
check says the same before and after analyze rewrote the summary.
"""

from __future__ import annotations

import pytest
from clihelp import pdrepro
from runkinds import RECORDED, build_smoke_run, build_sweep_run, copy_recorded, error_lines, gates, tree_hash

KINDS = {
    "smoke": lambda root: build_smoke_run(root),
    "sweep": lambda root: build_sweep_run(root),
    "onebox": lambda root: build_sweep_run(root, "onebox-qwen25-0.5b"),
    **{f"recorded-{p.name}": (lambda root, p=p: copy_recorded(p, root)) for p in RECORDED},
}
# Built to pass; the one-box fixture's logs name no transport, and a recorded run is held to whatever its
# own scenario says: for those the matrix asks only that the commands agree and keep their promise.
BUILT_TO_PASS = {"smoke", "sweep"}


def _one_line_or_none(rc: int, out: str, err: str) -> None:
    assert rc in (0, 1, 2), (rc, out[-2000:], err[-2000:])
    assert "Traceback" not in out + err
    if rc == 2:
        assert len(error_lines(out + err)) == 1, out[-2000:] + err[-2000:]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_read_command_on_every_run(tmp_path, kind):
    run = KINDS[kind](tmp_path / "run")
    root = run.root
    before = tree_hash(root)

    checked = pdrepro("check", root)
    _one_line_or_none(checked.rc, checked.out, checked.err)
    assert tree_hash(root) == before, "check wrote into the run it judged"

    judged = gates(root, tmp_path / "junit.xml")
    _one_line_or_none(judged.returncode, judged.stdout, judged.stderr)
    assert tree_hash(root) == before, "the gates wrote into the run they judged"
    assert judged.returncode == checked.rc, (judged.stdout[-3000:], checked.out[-3000:], checked.err)

    analyzed = pdrepro("analyze", root)
    _one_line_or_none(analyzed.rc, analyzed.out, analyzed.err)
    assert analyzed.rc in (0, 2)
    if analyzed.rc == 0:
        assert run.summary_file.is_file() and run.report_file.is_file()
        assert str(root) not in run.summary_file.read_text(), "the summary names the path of the machine that made it"
    again = pdrepro("check", root)
    assert again.rc == checked.rc, (again.out[-2000:], checked.out[-2000:])
    if kind in BUILT_TO_PASS:
        assert checked.rc == 0 and analyzed.rc == 0, checked.out[-3000:] + checked.err


def test_check_with_another_scenario_never_rewrites_the_run(tmp_path):
    """`pdrepro check RUN --scenario OTHER` overwrote summary.json, report.md and the plots before refusing."""
    run = build_sweep_run(tmp_path / "run")
    assert pdrepro("analyze", run.root).rc == 0
    before = tree_hash(run.root)
    result = pdrepro("check", run.root, "--scenario", "h20-qwen3-235b-2p2d")
    _one_line_or_none(result.rc, result.out, result.err)
    assert tree_hash(run.root) == before
    judged = gates(run.root, tmp_path / "junit.xml", "--scenario", "h20-qwen3-235b-2p2d")
    assert judged.returncode == result.rc and tree_hash(run.root) == before


def test_analyze_on_the_smokes_own_output(tmp_path):
    """`make smoke` then `pdrepro analyze results/latest` ended in AttributeError: the smoke's run is made again
    from its raw result, through a link named latest as the smoke leaves it."""
    run = build_smoke_run(tmp_path / "smoke-x")
    (tmp_path / "latest").symlink_to("smoke-x")
    written = run.summary_file.read_text()
    result = pdrepro("analyze", tmp_path / "latest")
    assert result.rc == 0, result.out + result.err
    assert "32768" in result.out and run.summary_file.read_text() == written
    assert "Mooncake against a plain socket copy" in run.report_file.read_text()
    assert pdrepro("check", tmp_path / "latest").rc == 0
