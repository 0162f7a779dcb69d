"""How far a sweep has got: the ETA before each length and a heartbeat while the
client is quiet. Reported only; nothing is decided on it."""

from __future__ import annotations

import logging
import threading
import time

from ..core.progress import fmt_s as fmt_s  # re-exported: the sweep's lines and the whole-job line read alike

log = logging.getLogger(__name__)


def _cost(prompt_len: int, output_len: int) -> float:
    # Decode steps cost far more per token than prefill tokens; this weighting
    # only shapes the ETA, which is re-fitted after every measured length.
    return prompt_len + 16 * output_len


class Progress:
    """Fits seconds per unit of cost on the lengths measured so far."""

    def __init__(self, todo: list[int], output_len: int):
        self.todo, self.output_len = todo, output_len
        self.bench_s = 0.0
        self.measured_cost = 0.0
        self.total_cost = sum(_cost(L, output_len) for L in todo)

    def expected_s(self, length: int) -> float | None:
        if self.measured_cost <= 0:
            return None
        return _cost(length, self.output_len) * self.bench_s / self.measured_cost

    def eta(self, index: int, length: int) -> str:
        """``index``: 1-based position of ``length`` in the lengths still to run."""
        if self.measured_cost <= 0:
            return "no ETA until the first length is measured"
        rate = self.bench_s / self.measured_cost
        remaining = self.total_cost - sum(_cost(L, self.output_len) for L in self.todo[: index - 1])
        return f"expected ~{fmt_s(_cost(length, self.output_len) * rate)}, overall ETA ~{fmt_s(remaining * rate)}"

    def measured(self, length: int, client_s: float) -> None:
        self.bench_s += client_s
        self.measured_cost += _cost(length, self.output_len)


class Heartbeat:
    """Says how far a length has got while the client is quiet (it prints
    little between requests at long prompts)."""

    def __init__(self, length: int, expected_s: float | None, every_s: float):
        self.length, self.expected_s = length, expected_s
        self.start = time.monotonic()
        self.done = threading.Event()
        self.thread = None
        if every_s > 0:
            self.thread = threading.Thread(target=self._loop, args=(every_s,), daemon=True)
            self.thread.start()

    def _loop(self, every_s: float) -> None:
        while not self.done.wait(every_s):
            elapsed = time.monotonic() - self.start
            if self.expected_s:
                left = self.expected_s - elapsed
                eta = f"~{fmt_s(left)} left" if left > 0 else f"{fmt_s(-left)} over the estimate"
                log.info(f"  prompt length {self.length}: {fmt_s(elapsed)} elapsed, {eta}")
            else:
                log.info(f"  prompt length {self.length}: {fmt_s(elapsed)} elapsed")

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join(timeout=1)
