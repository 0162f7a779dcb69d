"""The guide pages read as a newcomer needs them: the commands for the page's goal first, short sentences, no
words from how the bundle was made, and every measured figure they quote read here from the recorded run it
comes from, so a page cannot keep a figure its recording no longer holds."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from guidetext import GUIDE_PAGES, ROOT, blocks, paragraphs, sentences, words
from recordedtune import RECORDED as TUNED
from recordedtune import run_times

MAX_WORDS, MAX_MEAN = 60, 25
RECORDED = ROOT / "tests" / "recorded"
HOST_RUN = RECORDED / "h200-onebox-host-sglang-0.5.15.post1"
HOST_RERUN = RECORDED / "h200-onebox-host-sglang-0.5.15.post1-rerun"
HAND_RUN = RECORDED / "h200-onebox-sglang-0.5.15.post1"
COMPARE_RUN = RECORDED / "h200-compare-7b-sglang-0.5.15.post1"
LOAD_RUN = RECORDED / "h200-load-0.5b-mooncake-tcp-sglang-0.5.15.post1"
TUNE_RUN = TUNED

# Words about how the bundle was made or who made it, not about using it: a reader cannot act on them.
BUILD_WORDS = [
    (re.compile(r"\bworkplace\b", re.I), "workplace"),
    (re.compile(r"\blent\b|\blend(s|ing)?\b", re.I), "lent"),
    (re.compile(r"\bsessions?\b", re.I), "session"),
    (re.compile(r"\bissues? #?\d+\b|(?<![\w&])#\d+\b", re.I), "an issue number"),
    (re.compile(r"FACTS\.md"), "FACTS.md (not shipped)"),
    (re.compile(r"\b(the|a) lead\b|\bengineers?\b", re.I), "who made it"),
    (re.compile(r"\bbuild VM\b", re.I), "the machine the bundle was made on"),
]


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=_id)
def test_sentences_are_short(page):
    found = sentences(page.read_text())
    assert len(found) >= 5, f"{_id(page)}: almost no prose found; the sentence reader is broken"
    long = [s for s in found if words(s) > MAX_WORDS]
    assert not long, f"{_id(page)}: sentences over {MAX_WORDS} words: " + " || ".join(s[:90] for s in long)
    mean = sum(map(words, found)) / len(found)
    assert mean < MAX_MEAN, f"{_id(page)}: sentences average {mean:.1f} words (under {MAX_MEAN} wanted)"


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=_id)
def test_no_words_from_how_the_bundle_was_made(page):
    text = page.read_text()
    hits = [f"{name} ({m.group(0)!r}, line {text.count(chr(10), 0, m.start()) + 1})"
            for pattern, name in BUILD_WORDS for m in pattern.finditer(text)]
    assert not hits, f"{_id(page)}: " + "; ".join(hits)


@pytest.mark.parametrize("page", [p for p in GUIDE_PAGES if p.name != "README.md"], ids=_id)
def test_each_page_starts_with_its_commands_then_says_what_can_go_wrong(page):
    text = page.read_text()
    first_section = text.find("\n## ")
    found = blocks(text)
    assert found and found[0].language == "sh", f"{_id(page)}: the first block is not the page's commands (```sh)"
    assert first_section == -1 or text.index("```") < first_section, f"{_id(page)}: commands come after a section"
    intro = paragraphs(text[:text.index("```")])
    assert sum(len(p.split()) for p in intro) <= 40, f"{_id(page)}: more than a line or two before the commands"
    assert re.search(r"^## What can go wrong", text, re.M), f"{_id(page)}: no '## What can go wrong' section"


def test_the_sentence_reader_splits_and_ignores_what_it_should():
    page = ("# Title\n\nOne two three. Four `a b c d` five, e.g. six.\n\n- An item here\n- Another one.\n\n"
            "| a table. | Not prose. |\n\n```sh\nnot. prose. here.\n```\n")
    assert sentences(page) == ["One two three.", "Four CODE five, eg six.", "An item here", "Another one."]
    assert [b.info for b in blocks("x\n```sh run\nls\n```\n")] == ["sh run"]


# --- measured figures, read from the recordings --------------------------------------------------------------

def _minutes(path: Path) -> str:
    """The proof's wall time as the pages write it ("6 min 45 s"), from the `time` line its console kept."""
    match = re.search(r"^real\s+(\d+)m([\d.]+)s$", path.read_text(), re.M)
    assert match, f"{path}: no `real` line"
    seconds = int(match.group(1)) * 60 + round(float(match.group(2)))
    return f"{seconds // 60} min {seconds % 60} s"


def _m_s(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60} s"


def _stack_up(record: Path) -> str:
    """A stack's start as the page writes it: its first process started to its router healthy."""
    rec = json.loads(record.read_text())
    first, last = rec["processes"][0], rec["processes"][-1]
    return _m_s((datetime.fromisoformat(last["started_at"]) + timedelta(seconds=last["healthy_after_s"])
                 - datetime.fromisoformat(first["started_at"])).total_seconds())


def _step_seconds(jobs: Path, step: str) -> int:
    """Seconds from a job log's step stamp ``step`` to the stamp after it."""
    stamps = re.findall(r"^== \[(\d+) s\] \S+ (.+)$", jobs.read_text(), re.M)
    at = [name for _, name in stamps].index(step)
    return int(stamps[at + 1][0]) - int(stamps[at][0])


COMPARE_RATES = ("a10-qwen25-7b-onebox-rate1", "a10-qwen25-7b-onebox-rate4")
COMPARE_RATIOS = {"output throughput": "output_tok_s", "mean TTFT": "mean_ttft_ms", "mean ITL": "mean_itl_ms",
                  "P99 ITL": "p99_itl_ms"}


def _compare_times() -> list[tuple[str, str, str]]:
    """The comparison page's figures: each go's whole command from its job log's step stamps, each stack's start
    from its record, the sweeps' and bench clients' spans, and the ratio table and the regular pair's P99 ITL
    from each rate's judged summary."""
    page, first = "docs/guide/comparison.md", COMPARE_RUN / "first-session"
    out = [(page, _m_s(_step_seconds(first / "console" / "jobs.out", "compare start")),
            f"{COMPARE_RUN.name}/first-session/console/jobs.out"),
           (page, _m_s(_step_seconds(COMPARE_RUN / "console" / "jobs.out", "compare resume")),
            f"{COMPARE_RUN.name}/console/jobs.out")]
    for config in ("1P1D", "2-regular"):
        for root in (first, COMPARE_RUN):
            record = root / "cmp" / config / "stack.json"
            out.append((page, _stack_up(record), str(record.relative_to(RECORDED))))
    sweeps = [s for rate in COMPARE_RATES for s in (COMPARE_RUN / "cmp" / rate).glob("*/sweep-state.json")]
    took = [v["seconds"] for s in sweeps for v in json.loads(s.read_text())["lengths"].values()]
    benches = [json.loads(b.read_text())["duration"] for rate in COMPARE_RATES
               for b in (COMPARE_RUN / "cmp" / rate).glob("*/bench/result-*.jsonl")]
    assert len(took) == len(benches) == 4
    out.append((page, f"Each sweep took {min(took):.0f}-{max(took):.0f} s", f"{COMPARE_RUN.name}/cmp/*/*/sweep-state.json"))
    out.append((page, f"took {min(benches):.0f}-{max(benches):.0f} s", f"{COMPARE_RUN.name}/cmp/*/*/bench/"))
    summaries = [json.loads((COMPARE_RUN / "cmp" / rate / "summary.json").read_text())["configurations"]
                 for rate in COMPARE_RATES]
    for label, key in COMPARE_RATIOS.items():
        cells = [f"{s['1P1D'][side][key] / s['2-regular'][side][key]:.2f}" for s in summaries
                 for side in ("measured", "published")]
        out.append((page, f"| {label} | " + " | ".join(cells) + " |", f"{COMPARE_RUN.name}/cmp/*/summary.json"))
    p99 = [f"{s['2-regular']['measured']['p99_itl_ms']:.0f} ms at rate {rate}" for s, rate in zip(summaries, ("1.0", "4.0"))]
    out.append((page, ", ".join(p99), f"{COMPARE_RUN.name}/cmp/*/summary.json"))
    return out


def _load_figures() -> list[tuple[str, str, str]]:
    """The load pages' figures: each step's medians and tails from the run's summary (which the load tests hold
    to a fresh analysis), the throughput and the client's time from its bench files, the step times from its
    state, and the resumed command's wall time from the job log's step stamps."""
    load, pages = LOAD_RUN / "load", ("docs/guide/falls-short.md", "docs/guide/load.md")
    steps = {s["name"]: s for s in json.loads((load / "load-summary.json").read_text())["steps"]}
    bench = {n: json.loads((load / "steps" / n / "bench" / "result-4096.jsonl").read_text()) for n in steps}
    state = json.loads((load / "load-state.json").read_text())["steps"]
    stamps = {step: int(at) for at, step in re.findall(r"^== \[(\d+) s\] \S+ (load resume|check load)$",
                                                      (LOAD_RUN / "console" / "jobs.out").read_text(), re.M)}
    summary, jobs = f"{LOAD_RUN.name}/load/load-summary.json", f"{LOAD_RUN.name}/console/jobs.out"
    resumed = _m_s(stamps["check load"] - stamps["load resume"])
    out = [(page, resumed, jobs) for page in pages]
    out += [(pages[0], f"measured the last two in {resumed}", jobs), (pages[1], f"c8 in {resumed}", jobs)]
    c1, c8 = steps["c1"], steps["c8"]
    out += [(pages[0], f"from {c1['transfer_ms_p50']:.1f} ms at concurrency 1 to {c8['transfer_ms_p50']:.1f} ms at 8",
             summary),
            (pages[0], f"TTFT p99 from {c1['ttft_ms_p99']:.1f} ms to {c8['ttft_ms_p99']:.1f} ms", summary),
            (pages[0], f"({bench['c4']['request_throughput']:.1f} to {bench['c8']['request_throughput']:.1f} "
                       "requests/s)", f"{LOAD_RUN.name}/load/steps/*/bench")]
    medians = [f"{steps[n]['transfer_ms_p50']:.1f}" for n in ("c1", "c2", "c4", "c8")]
    widest = max(s["transfer_p99_over_p50"] for s in steps.values())
    took = [state[n]["ended_at"] - state[n]["started_at"] for n in steps]
    client = [bench[n]["duration"] for n in steps]
    out += [(pages[1], "The median transfer took {} ms at concurrency 1, {} at 2, {} at 4 and {} at 8".format(*medians),
             summary),
            (pages[1], f"the widest tail was {widest:.2f}x its median", summary),
            (pages[1], f"Each step took {min(took):.0f} to {max(took):.0f} s, of which the requests took "
                       f"{min(client):.0f} to {max(client):.0f} s", f"{LOAD_RUN.name}/load (state and bench)")]
    return out


def _check_counts(path: Path) -> str:
    match = re.search(r"^(\d+ passed, \d+ failed(, \d+ not applicable)?)$", path.read_text(), re.M)
    assert match, f"{path}: no count line"
    return match.group(1)


def _per_request(run: Path) -> str:
    rows = json.loads((run / "summary.json").read_text())["rows"]
    return " / ".join(f"{r['bandwidth_GB_s']:.2f}" for r in rows)


def _lengths(run: Path) -> str:
    return " / ".join(str(r["prompt_len"]) for r in json.loads((run / "summary.json").read_text())["rows"])


def _ceiling(path: Path) -> tuple[str, str]:
    found = re.findall(r"engine ceiling: length \d+: [\d.]+ GB/s per request, the engine alone ([\d.]+) GB/s "
                       r"\(\w+\): ratio ([\d.]+)", path.read_text())
    assert found, f"{path}: no engine ceiling lines"
    return " / ".join(a for a, _ in found), " / ".join(r for _, r in found)


def _figures() -> list[tuple[str, str, str]]:
    """(page, figure as quoted, where it comes from)."""
    out = []
    for run, where in ((HOST_RUN, "docs/gpu-onebox.md"), (HOST_RERUN, "docs/gpu-onebox.md")):
        out.append((where, _minutes(run / "proof.out"), f"{run.name}/proof.out"))
        out.append((where, _check_counts(run / "console" / "check.out"), f"{run.name}/console/check.out"))
        out.append((where, _per_request(run), f"{run.name}/summary.json"))
        alone, ratio = _ceiling(run / "console" / "check.out")
        out.append((where, alone, f"{run.name}/console/check.out"))
        out.append((where, ratio, f"{run.name}/console/check.out"))
        out.append(("README.md", _minutes(run / "proof.out"), f"{run.name}/proof.out"))
    out.append(("docs/gpu-onebox.md", _lengths(HOST_RUN), f"{HOST_RUN.name}/summary.json"))
    out.append(("docs/gpu-onebox.md", _check_counts(HAND_RUN / "check.out"), f"{HAND_RUN.name}/check.out"))
    out.append(("docs/onebox-verdict.md", _check_counts(HAND_RUN / "check.out"), f"{HAND_RUN.name}/check.out"))
    out.append(("docs/onebox-verdict.md", _check_counts(HOST_RUN / "console" / "check.out"),
                f"{HOST_RUN.name}/console/check.out"))
    for run, sweep in ((HAND_RUN, HAND_RUN / "sweep.out"), (HOST_RUN, HOST_RUN / "console" / "sweep.out"),
                       (HOST_RERUN, HOST_RERUN / "console" / "sweep.out")):
        match = re.search(r"(\d+\.\d s of \d+\.\d s) outside the bench client", sweep.read_text())
        assert match, f"{sweep}: no overhead line"
        out.append(("docs/onebox-verdict.md", match.group(1), f"{run.name}/{sweep.relative_to(run)}"))
    gates = re.search(r"(\d+ passed, \d+ skipped)", (HOST_RUN / "console" / "gates.out").read_text())
    assert gates
    out.append(("docs/onebox-verdict.md", gates.group(1), f"{HOST_RUN.name}/console/gates.out"))
    return out + _compare_times() + _load_figures() + _tune_times()


def _tune_times() -> list[tuple[str, str, str]]:
    """The tune page's GPU time: every run's time on its machine (recordedtune.run_times), summed."""
    total = sum(run_times().values())
    return [("docs/guide/tune.md", f"{total // 60} min {total % 60} s", f"{TUNE_RUN.name}/console, tune/*/stack.json")]


def _gpu_check_rows() -> list[tuple[str, str, str]]:
    """The images page's table: per length, the write and read medians of the stage wheel's gpu-check."""
    folder = RECORDED / "gpu-check"
    rows = []
    for direction in ("write", "read"):
        text = (folder / f"h200x2-{direction}-result.json.txt").read_text()
        for row in json.loads(text[text.index("{"):])["rows"]:
            rows.append((str(row["prompt_len"]), direction, f"{row['median_GB_s']:.2f} GB/s"))
    return rows


def test_the_images_page_quotes_the_recorded_gpu_check():
    lines = [l for l in (ROOT / "docs" / "guide" / "images.md").read_text().splitlines() if l.startswith("| ")]
    quoted = 0
    for length, direction, figure in _gpu_check_rows():
        row = next((l for l in lines if l.split("|")[1].strip().replace(",", "") == length), None)
        if row is None:
            continue  # the page quotes some lengths, not all
        cell = row.split("|")[3 if direction == "write" else 4]
        assert figure in cell, f"docs/guide/images.md, {length} tokens, {direction}: {cell.strip()!r}, recorded {figure}"
        quoted += 1
    assert quoted >= 6, "the images page quotes almost none of the recorded gpu-check figures"


@pytest.mark.parametrize(("page", "figure", "source"), _figures(), ids=lambda v: str(v)[:40])
def test_pages_quote_the_recorded_figures(page, figure, source):
    text = re.sub(r"\s+", " ", (ROOT / page).read_text())
    assert figure in text, f"{page} does not quote {figure!r}, which tests/recorded/{source} holds"


GB_S = re.compile(r"(?<![\w.])(\d+\.\d+)(?:[-–](\d+\.\d+))?(?: / [\d. /]+)? GB/s")


def _recorded_numbers() -> set[str]:
    """Every decimal number the recordings and the shipped scenarios hold, as the pages may round them."""
    numbers: set[str] = set()
    sources = [*RECORDED.rglob("*.json"), *RECORDED.rglob("*.out"), *RECORDED.rglob("*.md"), *RECORDED.rglob("*.txt"),
               *(ROOT / "src" / "pdrepro" / "scenarios").glob("*.yaml")]
    for path in sources:
        for value in re.findall(r"\d+\.\d+", path.read_text(errors="replace")):
            numbers.add(value)
            numbers.add(f"{float(value):.2f}")
            numbers.add(f"{float(value):.1f}")
    return numbers


def test_every_bandwidth_a_page_quotes_is_recorded_or_published():
    # A GB/s figure in prose is a measurement (or the published one): it must be one the tree holds.
    known = _recorded_numbers()
    stray = []
    for page in GUIDE_PAGES:
        text = re.sub(r"\s+", " ", page.read_text())
        for match in re.finditer(r"(\d+\.\d+(?: / \d+\.\d+)*)(?:-(\d+\.\d+))? GB/s", text):
            values = match.group(1).split(" / ") + ([match.group(2)] if match.group(2) else [])
            stray += [f"{_id(page)}: {v} GB/s" for v in values if v not in known]
    assert len(known) > 100
    assert not stray, "GB/s figures no recording or shipped scenario holds: " + "; ".join(stray)


# The one duration a page quotes that no file in the tree records: make test's wall time on a 2-core machine,
# which the README states so a newcomer knows what to expect. Named here so that no other can slip in.
NOT_RECORDED = {("README.md", "10 min 17 s")}


def test_every_wall_time_a_page_quotes_is_recorded():
    recorded = {(page, figure) for page, figure, _ in _figures()}
    stray = []
    for page in GUIDE_PAGES:
        name = _id(page)
        for figure in re.findall(r"\d+ min \d+ s", re.sub(r"\s+", " ", page.read_text())):
            if (name, figure) not in recorded | NOT_RECORDED:
                stray.append(f"{name}: {figure}")
    assert not stray, "wall times no recording holds: " + "; ".join(stray)
