"""What the pages state stays true: every relative link and `../` path they give exists (anchors included), every
count a page quotes as today's is what `pdrepro check` and the gates give on the recorded run now, and the pass
mark the inputs page quotes is the shipped scenario's. Counts change as checks are added: the page then names the
count this test computes, and says which one was printed when the run was recorded (test_guide_pages holds that)."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from guidetext import FENCE, ROOT

from pdrepro.cli import main
from pdrepro.scenario.model import load_scenario

RECORDED = ROOT / "tests" / "recorded"
HOST_RUN = RECORDED / "h200-onebox-host-sglang-0.5.15.post1"
HOST_RERUN = RECORDED / "h200-onebox-host-sglang-0.5.15.post1-rerun"
AB_NIXL = RECORDED / "h200-ab-mooncake-tcp-vs-nixl-sglang-0.5.15.post1" / "ab" / "nixl"
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *RECORDED.glob("*/README.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(r"`(\.\./[^`\s]+)`")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def _anchors(page: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#+\s+(.+)$", FENCE.sub("", page.read_text()), re.M)}


def dead_links(page: Path) -> list[str]:
    """The relative links and `../` paths of ``page`` (outside fenced blocks) that point at nothing."""
    text = FENCE.sub("", page.read_text())
    dead = []
    for target in LINK.findall(text) + CODE_PATH.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL: not this tree's to hold
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            dead.append(target)
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            dead.append(target)
    return dead


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_relative_link_and_path_exists(page):
    dead = dead_links(page)
    assert not dead, f"{_id(page)}: links or paths to nothing: {dead}"


def test_the_link_reader_finds_dead_links_and_anchors(tmp_path):
    (tmp_path / "there.md").write_text("# A Heading, here\n\ntext\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-heading-here) [web](https://example.com/x)\n"
                    "[gone](nowhere.md) [bad anchor](there.md#nope) `../../no-such-folder/`\n"
                    "```sh\n[in a block](ignored.md)\n```\n")
    assert dead_links(page) == ["nowhere.md", "there.md#nope", "../../no-such-folder/"]


# --- counts the pages quote as today's --------------------------------------------------------------------------

def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / run.name
    shutil.copytree(run, dest)
    return dest


def _check_count(run: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["check", str(run)])
    found = re.findall(r"^(\d+ passed, \d+ failed(?:, \d+ not applicable)?)$", out.getvalue() + err.getvalue(), re.M)
    assert found, f"check printed no count line on {run}"
    return found[-1]


def _gates_count(run: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                           str(ROOT / "repro"), "--run-dir", str(run)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    found = re.search(r"(\d+ passed, \d+ skipped)", proc.stdout)
    assert found, proc.stdout[-2000:]
    return found.group(1)


def _quotes(page: str, figure: str) -> bool:
    return figure in re.sub(r"\s+", " ", (ROOT / page).read_text())


@pytest.mark.parametrize("run", [HOST_RUN, HOST_RERUN], ids=lambda p: p.name)
def test_the_one_gpu_pages_quote_todays_check_count(run, tmp_path):
    count = _check_count(_copy(run, tmp_path))
    for page in ("docs/gpu-onebox.md", "docs/onebox-verdict.md"):
        assert _quotes(page, f"now prints `{count}`") or _quotes(page, f"Today `check` prints `{count}`"), \
            f"{page}: `pdrepro check {run.relative_to(ROOT)}` prints {count!r} today; say so"


def test_the_verdict_page_quotes_todays_gate_count(tmp_path):
    count = _gates_count(_copy(HOST_RUN, tmp_path))
    assert _quotes("docs/onebox-verdict.md", f"the gates `{count}`"), \
        f"docs/onebox-verdict.md: the gates give {count!r} on {HOST_RUN.name} today; say so"


def test_the_one_gpu_page_quotes_the_nixl_arms_check_count(tmp_path):
    count = _check_count(_copy(AB_NIXL, tmp_path))
    assert "not applicable" in count and ", 0 failed" in count  # a NIXL arm is judged, and passes
    assert _quotes("docs/gpu-onebox.md", f"`ab/nixl` prints `{count}`"), \
        f"docs/gpu-onebox.md: check on the A/B's NIXL arm prints {count!r} today; say so"


# --- the pass mark the inputs page quotes ------------------------------------------------------------------------

def test_the_inputs_page_quotes_the_scenarios_pass_mark():
    scenario = load_scenario("h20-qwen3-235b-1p1d")
    t, ref, sweep = scenario.thresholds, scenario.reference, scenario.sweep
    assert ref is not None
    longest = max(sweep.prompt_lens)
    shares = {r.prompt_len: 100 * r.transfer_ms / r.ttft_ms for r in ref.rows}
    top = max(shares, key=lambda n: shares[n])
    ttft_minutes = sum(r.ttft_ms for r in ref.rows) * sweep.num_prompts / 60_000
    rules = t.derivation
    figures = [
        f"at least {rules['min_bandwidth_GB_s'].factor * 100:.0f} % of the published figure at each length: "
        f"{t.min_bandwidth_GB_s[longest]} GB/s at {longest} tokens",
        f"at most {rules['max_ttft_ms'].factor * 100:.0f} % of the published figure at each length: "
        f"{t.max_ttft_ms[longest]} ms at {longest} tokens",
        f"at least {rules['min_peak_bandwidth_GB_s'].factor * 100:.0f} % of the published "
        f"{ref.headline['peak_bandwidth_GB_s']} GB/s: {t.min_peak_bandwidth_GB_s} GB/s",
        f"at least {rules['min_peak_utilization_pct'].factor * 100:.0f} % of the published "
        f"{ref.headline['peak_utilization_pct']} %: {t.min_peak_utilization_pct} %",
        f"KV transfer at most {t.max_transfer_share_pct:g} % of the mean TTFT",
        f"{shares[longest]:.1f} % at {longest} tokens and at most {shares[top]:.1f} % (at {top})",
        f"add up to about {round(ttft_minutes)} minutes over the sweep's {len(sweep.prompt_lens) * sweep.num_prompts} "
        "requests",
    ]
    missing = [f for f in figures if not _quotes("docs/guide/inputs.md", f)]
    assert not missing, f"docs/guide/inputs.md does not quote what the scenario holds: {missing}"


# --- the fault run the fault page quotes -------------------------------------------------------------------------

FAULT_RUN = RECORDED / "h200-fault-mooncake-tcp-sglang-0.5.15.post1"


def test_the_fault_page_quotes_the_recorded_h200_faults():
    """docs/guide/fault.md's "On an H200": its table and figures are built here from the recorded summaries."""
    from pdrepro.report.fault import fault_table
    from pdrepro.rundir import faultsummary

    faults = {}
    rows = []
    for name in ("kill-decode", "kill-router", "kill-prefill", "stop-decode"):
        summary = faultsummary.read(FAULT_RUN / "runs" / f"fault-{name}")
        table = fault_table(summary).splitlines()
        rows += table[:2] if not rows else []
        rows.append(table[2])
        faults[name] = summary.faults[0]
    text = (ROOT / "docs" / "guide" / "fault.md").read_text()
    section = text.split("## On an H200", 1)[1].split("\n## ", 1)[0]
    assert [line for line in section.splitlines() if line.startswith("|")] == rows
    kd, kp, sd = faults["kill-decode"], faults["kill-prefill"], faults["stop-decode"]
    figures = [
        f"Each fault sent {len(kd.requests)} requests",
        f"lost {kd.counts.lost} of {len(kd.requests)} requests without an error",
        f"was up {kd.restart_up_s:g} s after the kill",
        f"lost {kp.counts.lost} of {len(kp.requests)} requests",
        f"for {round(sd.stopped_for_s or 0):g} s lost none: all {sd.counts.answered} requests",
        f"a client timeout of {kd.client_timeout_s:g} s",
        f"at most {faultsummary.read(FAULT_RUN / 'runs' / 'fault-kill-decode').concurrency} in flight",
    ]
    missing = [f for f in figures if f not in re.sub(r"\s+", " ", section)]
    assert not missing, f"docs/guide/fault.md does not quote what the recorded fault run holds: {missing}"
    assert faults["kill-router"].counts.lost == 0 and sd.counts.lost == 0  # "lost none", as the page says
