"""A load sweep's report: RUN/report.md with one row per step (failure accounting, throughput, TTFT and transfer
time p50/p99, the verdicts) and RUN/plots/load.png (transfer p50/p99 and TTFT p99 per step, and below them the
throughput: requests/s and output tokens/s). It reads the summary as
its model (rundir.loadsummary.LoadSummary) and the verdicts as `pdrepro check` draws them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..rundir.loadsummary import LoadStepFigures, LoadSummary, ServerFailures  # noqa: E402
from ..verdicts.load import step_checks  # noqa: E402
from ..verdicts.result import CheckResult  # noqa: E402
from .plots import finish  # noqa: E402

PLOT = "load.png"


def _f(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _n(value: float | int | None) -> str:
    return "—" if value is None else f"{value:g}"


def _rate(step: LoadStepFigures) -> str:
    return "inf" if step.request_rate is None else f"{step.request_rate:g}"


def _verdict(results: list[CheckResult]) -> str:
    bad = [r.name for r in results if not r.passed]
    return "PASS" if not bad else "FAIL: " + ", ".join(bad)


def _server(step: LoadStepFigures, figure: Callable[[ServerFailures], float | None]) -> str:
    """One /metrics figure summed over the step's servers (— when none recorded it)."""
    total = step.over_servers(figure)
    return "—" if total is None else _n(total)


def step_table(summary: LoadSummary) -> str:
    headers = ["step", "concurrency", "rate (req/s)", "failed (client)", "failed /generate (servers)",
               "#retries (prefill log)", "peer recoveries", "retracted", "throughput (req/s)",
               "output (tokens/s)", "TTFT p50 (ms)", "TTFT p99 (ms)",
               "transfer p50 (ms)", "transfer p99 (ms)", "p99/p50", "verdict"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for step in summary.steps:
        cells = [step.name, _n(step.concurrency), _rate(step),
                 "—" if step.failed_requests is None else f"{step.failed_requests} of {step.requests}",
                 _server(step, lambda s: s.generate_failed), _n(step.retries), _server(step, lambda s: s.session_recoveries),
                 _server(step, lambda s: s.retracted), _f(step.requests_per_s), _f(step.output_tokens_per_s, 1),
                 _f(step.ttft_ms_p50), _f(step.ttft_ms_p99), _f(step.transfer_ms_p50),
                 _f(step.transfer_ms_p99), _f(step.transfer_p99_over_p50), _verdict(step_checks(summary, step))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(summary: LoadSummary, plot: Path | None = None) -> str:
    t = summary.thresholds
    out = [f"# Load sweep: {summary.scenario}", "",
           f"{summary.num_prompts} request(s) of {summary.prompt_len} prompt tokens per step, after "
           f"{summary.warmup_requests} warm-up request(s) each (left out of every figure).", "",
           f"Gates per step: no more than {t.max_request_errors} failed request(s) (the bench client's, and the "
           f"servers' failed /generate answers where /metrics was scraped); per-request KV transfer time p99 within "
           f"{t.max_transfer_p99_over_p50:g}x its p50 (thresholds.max_request_errors, "
           "thresholds.max_transfer_p99_over_p50).", "",
           step_table(summary), "",
           "Transfer time: per request, from the prefill server's ReqTimeStats line (rank 0's transfer_total over "
           "its transfer_speed) of the requests that entered it while the step ran. TTFT: the bench client's, of "
           "its successful requests. Throughput: the client's successful requests and the tokens they generated over "
           "its own duration of the step (its record's completed, total_output_tokens and duration). /metrics "
           "figures are each step's difference of the scrapes before and after "
           "it (`--metrics`); retracted requests are the gauge after the step."]
    if plot is not None:
        out += ["", f"![load]({plot.parent.name}/{plot.name})"]
    errors = [s for s in summary.steps if s.first_error]
    if errors:
        out += ["", "## First failed request per step", ""]
        out += [f"- {s.name}: `{(s.first_error or '')[:200]}`" for s in errors]
    if summary.issues:
        out += ["", "## Issues", ""]
        out += [f"- {i.severity}{'' if i.step is None else f' (step {i.step})'}: {i.message}" for i in summary.issues]
    return "\n".join(out) + "\n"


def _throughput(ax, steps: list[LoadStepFigures], x: list[int]) -> None:
    """Requests/s (left axis) and output tokens/s (right axis) per step, each where the step has it."""
    other = ax.twinx()
    for axis, figure, label, style, color in (
            (ax, lambda s: s.requests_per_s, "requests/s", "o-", "tab:green"),
            (other, lambda s: s.output_tokens_per_s, "output tokens/s", "d--", "tab:purple")):
        ys = [figure(s) for s in steps]
        if any(y is not None for y in ys):
            axis.plot([i for i, y in zip(x, ys) if y is not None], [y for y in ys if y is not None], style,
                      color=color, label=label)
        axis.set_ylabel(label, color=color)
        axis.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title("throughput", fontsize=9)


def plot(summary: LoadSummary, path: Path) -> Path | None:
    """Transfer time p50/p99 and TTFT p99 per step, in the steps' order; None when no step has a figure."""
    steps = [s for s in summary.steps if s.transfer_ms_p50 is not None or s.ttft_ms_p99 is not None]
    if not steps:
        return None
    x = list(range(len(steps)))
    fig, (ax, below) = plt.subplots(2, 1, figsize=(8, 7.2), sharex=True, height_ratios=(3, 2))
    lines: tuple[tuple[Callable[[LoadStepFigures], float | None], str, str], ...] = (
        (lambda s: s.transfer_ms_p50, "KV transfer p50", "o-"), (lambda s: s.transfer_ms_p99, "KV transfer p99", "s--"),
        (lambda s: s.ttft_ms_p99, "TTFT p99", "^:"))
    for figure, label, style in lines:
        ys = [figure(s) for s in steps]
        if any(y is not None for y in ys):
            ax.plot([i for i, y in zip(x, ys) if y is not None], [y for y in ys if y is not None], style, label=label)
    failed = [i for i, s in zip(x, steps) if s.failed_requests]
    for i in failed:
        ax.axvspan(i - 0.4, i + 0.4, color="red", alpha=0.12)
    ax.set_ylabel("milliseconds")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _throughput(below, steps, x)
    below.set_xticks(x, [s.name for s in steps])
    below.set_xlabel("load step" + (" (red: failed requests)" if failed else ""))
    finish(fig, ax, f"Load at {summary.prompt_len} tokens ({summary.scenario})", path)
    return path
