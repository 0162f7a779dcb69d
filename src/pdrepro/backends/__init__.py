"""The KV transfer backends a scenario can pick (``launch.transfer_backend``), one module each, from a registry.

Each backend owns what differs between them: the environment it reads and sets, the log lines that prove
its transport, what the engine's logged per-request time means with it, and the packages it needs and
provenance names. The launch, the sweep, the analysis, the verdicts and the report ask the registry
(``backend(name)``) and never spell a backend's name themselves.
"""

from .base import TransferBackend, TransportReading
from .registry import BACKENDS, backend, names

__all__ = ["BACKENDS", "TransferBackend", "TransportReading", "backend", "names"]
