"""The run directory: its layout and the models of its files (see layout.py for the tree)."""

from .baseline import BaselineFile
from .layout import RunDir, server_log_index, server_log_name, why_absent
from .provenance import Provenance
from .sweepstate import LengthRecord, SweepEvent, SweepStateFile

__all__ = ["BaselineFile", "LengthRecord", "Provenance", "RunDir", "SweepEvent", "SweepStateFile", "server_log_index",
           "server_log_name", "why_absent"]
