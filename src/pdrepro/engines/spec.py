"""What the launch plan tells an engine about one server or one router; the engine turns it into argv.

Plain values only, in the plan's words (ports, TP, the role's mode, the transfer backend's registry name):
the flags that spell them belong to each engine's module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerSpec:
    python: str                       # the interpreter the argv starts with
    model_path: str
    port: int
    tp: int
    dtype: str
    stream_interval: int
    chunked_prefill_size: int
    mode: str | None = None           # prefill | decode; None for a regular (not disaggregated) server
    bootstrap_port: int | None = None  # a prefill server's
    backend: str | None = None        # the transfer backend's registry name (disaggregated servers)
    ib_devices_file: str | None = None  # GPU-to-RDMA-device map; None lets the backend pick
    metrics: bool = False
    mem_fraction: float | None = None  # the part of the GPU memory free at start the server may take
    extra_args: tuple[str, ...] = ()  # the scenario's extra server args
    site_args: tuple[str, ...] = ()   # the site's (--server-arg), appended last


@dataclass(frozen=True)
class Worker:
    role: str                         # prefill | decode
    url: str
    bootstrap_port: int | None = None


@dataclass(frozen=True)
class RouterSpec:
    python: str
    port: int
    policy: str
    # A disaggregated router's workers (prefill and decode), or a regular router's server URLs.
    workers: tuple[Worker, ...] = ()
    urls: tuple[str, ...] = ()
