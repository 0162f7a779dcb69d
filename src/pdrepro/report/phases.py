"""The report's "Where a request's time goes": per length, the median of each phase the servers logged
(summary rows' ``phase_ms_median``), beside the KV transfer time. Absent when no row carries phases, so
a run without them reads as it always did."""

from __future__ import annotations

from tabulate import tabulate

from ..rundir.summarymodel import Summary

# Columns in the order a request meets the phases: the prefill server's, then the decode's, each role's in
# its own order; a phase another build logs follows its role's known ones, by name.
ROLES = ("prefill", "decode")
PHASES = ("bootstrap", "bootstrap_queue", "alloc_wait", "transfer", "queue", "forward")
DASH = "—"


def phase_label(key: str) -> str:
    """``prefill.alloc_wait`` as words: ``prefill alloc wait``."""
    role, _, phase = key.partition(".")
    return f"{role} {phase.replace('_', ' ')}".strip()


def _header(key: str) -> str:
    label = phase_label(key)
    return f"{label[:1].upper()}{label[1:]} (ms)"


def phase_order(key: str) -> tuple:
    role, _, phase = key.partition(".")
    return (ROLES.index(role) if role in ROLES else len(ROLES),
            PHASES.index(phase) if phase in PHASES else len(PHASES), key)


def _cell(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def phases_section(summary: Summary) -> list[str]:
    rows = [r for r in summary.served_rows() if r.phase_ms_median]
    if not rows:
        return []
    present = {key for r in rows for key in r.phase_ms_median or {}}
    keys = sorted(present, key=phase_order)
    table = [[str(r.prompt_len), _cell(r.transfer_ms_median), *(_cell((r.phase_ms_median or {}).get(k)) for k in keys)]
             for r in rows]
    headers = ["Prompt Length", "KV transfer (ms)", *(_header(k) for k in keys)]
    text = tabulate(table, headers=headers, tablefmt="github", disable_numparse=True, colalign=("right",) * len(headers))
    return ["## Where a request's time goes", "",
            "The phases each server timed for every request, as medians over the requests the transfer times are "
            "drawn from, in milliseconds. The prefill server: bootstrap (agreeing with the decode server where the "
            "KV will go), queue (waiting to be scheduled), forward (running the prompt through the model, then "
            "holding the request until its KV has left: it includes the transfer). The decode server: "
            "bootstrap, alloc wait (waiting for free KV memory to receive into), transfer (waiting until the KV has "
            "landed: it starts about when the prefill's forward does, so it spans that forward as well as the copy), "
            "queue, forward (generating the output tokens).", "", text, ""]
