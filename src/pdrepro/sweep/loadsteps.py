"""The steps of a load sweep, from the command line's lists: ``--concurrency 1,2,4,8`` and/or
``--request-rate 2,4,inf``. One list gives one step per value; both give every pairing, concurrency outer (each
concurrency at each rate). A list is a claim like any input: each value is checked here, and a bad one is one
line naming the option, the value and what it takes."""

from __future__ import annotations

import math

from ..core.errors import UserError
from ..core.strictmodel import load
from ..rundir.loadstate import MAX_RATE, MAX_STEPS, MIN_RATE, LoadStep

# Longer than any list a person types; the cap keeps a hostile value from costing time before it is refused.
_MAX_TEXT = 2000


def _items(option: str, text: str) -> list[str]:
    if len(text) > _MAX_TEXT:
        raise UserError(f"{option}: {len(text)} characters; give a short comma-separated list, e.g. 1,2,4,8")
    items = [w.strip() for w in text.split(",")]
    if not items or any(not w for w in items):
        raise UserError(f"{option} {text!r}: an empty value; give a comma-separated list, e.g. 1,2,4,8")
    if len(items) > MAX_STEPS:
        raise UserError(f"{option}: {len(items)} values; give at most {MAX_STEPS}")
    if len(set(items)) != len(items):
        raise UserError(f"{option} {text!r}: a value is listed twice; list each once")
    return items


def concurrencies(text: str) -> list[int]:
    out = []
    for word in _items("--concurrency", text):
        if not word.isascii() or not word.isdigit() or not 1 <= int(word) <= 100_000:
            raise UserError(f"--concurrency {word!r}: not a whole number of requests in flight from 1 to 100000; "
                            "give e.g. --concurrency 1,2,4,8")
        out.append(int(word))
    if len(set(out)) != len(out):
        raise UserError(f"--concurrency {text!r}: a value is listed twice; list each once")
    return out


def rates(text: str) -> list[float | None]:
    """Requests per second; ``inf`` (all at once) is None, as the load state keeps it."""
    out: list[float | None] = []
    for word in _items("--request-rate", text):
        if word.lower() in ("inf", "infinity"):
            out.append(None)
            continue
        try:
            value = float(word) if word.isascii() else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not MIN_RATE <= value <= MAX_RATE:
            raise UserError(f"--request-rate {word!r}: not a rate from {MIN_RATE:g} to {MAX_RATE:g} requests per "
                            "second, nor inf; give e.g. --request-rate 2,4,inf")
        out.append(value)
    return out


def parse_steps(concurrency: str | None, request_rate: str | None, default_concurrency: int | None = None,
                default_rate: float | None = None) -> tuple[LoadStep, ...]:
    """The steps, in the order given. The option not given takes the scenario's value (``default_*``)."""
    if concurrency is None and request_rate is None:
        raise UserError("give the load's steps: --concurrency 1,2,4,8 and/or --request-rate 2,4,inf")
    caps: list[int | None] = list(concurrencies(concurrency)) if concurrency is not None else [default_concurrency]
    per_s = rates(request_rate) if request_rate is not None else [default_rate]
    # The scenario's own value (the option not given) is held to the same bounds: one line if it is out of them.
    steps = tuple(load(LoadStep, {"concurrency": c, "request_rate": r}, "the load step",
                       fix="give both --concurrency and --request-rate") for c in caps for r in per_s)
    if len(steps) > MAX_STEPS:
        raise UserError(f"--concurrency x --request-rate: {len(steps)} steps; give at most {MAX_STEPS}")
    names = [s.name for s in steps]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise UserError(f"--request-rate {request_rate!r}: two rates give the one step {twice}; give rates that "
                        "differ in their first six digits")
    return steps
