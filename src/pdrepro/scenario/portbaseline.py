"""The share of its line rate each RDMA port must reach in `pdrepro baseline`, by default: one number the
scenario's thresholds (sections.Thresholds) and the command line (`baseline --min-port-fraction`) both read, here
where reading it imports no pydantic."""

from __future__ import annotations

MIN_PORT_BASELINE_FRACTION = 0.9
