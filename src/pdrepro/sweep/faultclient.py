"""The bounded load `pdrepro fault` runs through the router while it injects a fault: N requests to /generate
(token ids, a fixed number of new tokens, no streaming: the shape of the bench's requests to SGLang), at most C in
flight, each recorded as it was sent and as it ended: answered (HTTP 200 with a body), an HTTP error, an error the
client saw (refused, reset, closed without an answer), or no answer before the client's timeout.

Each request runs in a thread of its own and ends by its own timeout; the thread that waits for the load looks at
the signal flag (core.signals) every poll, so a stop ends the wait at once and the requests still running are
recorded as not ended."""

from __future__ import annotations

import http.client
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..core import signals
from ..rundir.faultsummary import Outcome, RequestRecord

# A body larger than this is no answer to a few tokens: read this much and call it answered.
MAX_BODY_BYTES = 1 << 20
# Token ids of the prompt: ordinary ids of every shipped model's vocabulary, repeated.
PROMPT_IDS = tuple(range(1000, 1100))


@dataclass(frozen=True)
class LoadShape:
    router_url: str           # http://host:port
    requests: int
    concurrency: int
    timeout_s: float          # the client's timeout per request (no byte for this long: no answer)
    prompt_tokens: int = 64
    new_tokens: int = 16


def body(shape: LoadShape, index: int) -> bytes:
    ids = [PROMPT_IDS[(index + i) % len(PROMPT_IDS)] for i in range(shape.prompt_tokens)]
    return json.dumps({"input_ids": ids, "sampling_params": {"temperature": 0.0, "max_new_tokens": shape.new_tokens,
                                                             "ignore_eos": True}, "stream": False}).encode()


def post(url: str, data: bytes, timeout_s: float) -> tuple[Outcome, int | None, str | None]:
    """(outcome, HTTP status, error) of one POST: ``answered``, ``http_error``, ``client_error`` or ``no_answer``."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout_s)
    try:
        conn.request("POST", parts.path or "/", body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        payload = resp.read(MAX_BODY_BYTES)
        if resp.status != 200:
            return "http_error", resp.status, payload[:200].decode(errors="replace")
        if not payload:
            return "client_error", resp.status, "HTTP 200 with an empty body"
        return "answered", resp.status, None
    except TimeoutError:
        return "no_answer", None, f"no answer within {timeout_s:g} s"
    except (OSError, http.client.HTTPException) as exc:
        return "client_error", None, f"{type(exc).__name__}: {exc}"[:200]
    finally:
        conn.close()


@dataclass
class Load:
    """A running load: its requests' records, filled in by the request threads as they go."""

    shape: LoadShape
    t0: float = field(default_factory=time.monotonic)
    records: dict[int, RequestRecord] = field(default_factory=dict)
    sent: dict[int, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.t0

    def in_flight(self) -> list[int]:
        with self.lock:
            return [i for i in self.sent if i not in self.records]

    def counts(self) -> tuple[int, int]:
        """(sent, ended)."""
        with self.lock:
            return len(self.sent), len(self.records)

    def _one(self, index: int) -> None:
        with self.lock:
            self.sent[index] = self.now()
        outcome, status, error = post(self.shape.router_url + "/generate", body(self.shape, index), self.shape.timeout_s)
        ended = self.now()
        with self.lock:
            self.records[index] = RequestRecord(index=index, sent_s=round(self.sent[index], 4), ended_s=round(ended, 4),
                                                outcome=outcome, status=status, error=error)

    def _feeder(self) -> None:
        gate = threading.Semaphore(self.shape.concurrency)
        for index in range(self.shape.requests):
            gate.acquire()

            def run(i: int = index) -> None:
                try:
                    self._one(i)
                finally:
                    gate.release()
            worker = threading.Thread(target=run, daemon=True, name=f"pdrepro-fault-req-{index}")
            self.threads.append(worker)
            worker.start()

    def start(self) -> None:
        threading.Thread(target=self._feeder, daemon=True, name="pdrepro-fault-load").start()

    def wait_until(self, ready, limit_s: float) -> bool:
        """Waits until ``ready(self)`` holds (True) or ``limit_s`` passed (False), answering a signal at once."""
        deadline = time.monotonic() + limit_s
        while not ready(self):
            if time.monotonic() > deadline:
                return False
            signals.sleep(0.005)
        return True

    def finish(self, limit_s: float) -> tuple[RequestRecord, ...]:
        """Every request's record once all have ended (each ends by its own timeout), or after ``limit_s``: a
        request not ended by then is recorded as such, and counts as lost."""
        self.wait_until(lambda load: load.counts()[1] >= self.shape.requests, limit_s)
        return self.snapshot()

    def snapshot(self) -> tuple[RequestRecord, ...]:
        with self.lock:
            out = dict(self.records)
            sent = dict(self.sent)
        for index in range(self.shape.requests):
            if index not in out:
                out[index] = RequestRecord(index=index, sent_s=round(sent[index], 4) if index in sent else None,
                                           ended_s=None, outcome="not_ended", status=None,
                                           error=None if index in sent else "never sent")
        return tuple(out[i] for i in sorted(out))
