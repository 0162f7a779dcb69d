"""The serving engines a scenario can run, one module each, from a registry (SGLang today).

Each owns what differs between engines: the server's and the router's argv, the health and readiness
paths, the request-stats lines it logs, the bench client, and the packages provenance names.
"""

from .base import ServingEngine
from .registry import ENGINES, engine, names

__all__ = ["ENGINES", "ServingEngine", "engine", "names"]
