"""Where things live in a run directory; every step reads and writes through this.

RUN/
  scenario.yaml            the scenario the run used (resolved, canonical)
  provenance.json          images, commits, hosts, environment
  bench/result-<L>.jsonl   bench client output, one file per prompt length
  logs/prefill.log         prefill server log (ReqTimeStats lines)
  logs/decode.log          decode server log
  metrics/*.prom           optional /metrics scrapes
  counters/<L>.json        RDMA port counters of each node before and after length L
  summary.json             analysis result (machine-readable)
  report.md, plots/*.png   analysis result (for people)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

_BENCH = re.compile(r"^result-(\d+)\.jsonl$")


@dataclass(frozen=True)
class RunDir:
    root: Path

    @property
    def bench_dir(self) -> Path:
        return self.root / "bench"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def metrics_dir(self) -> Path:
        return self.root / "metrics"

    @property
    def counters_dir(self) -> Path:
        return self.root / "counters"

    def counters_file(self, prompt_len: int) -> Path:
        return self.counters_dir / f"{prompt_len}.json"

    @property
    def plots_dir(self) -> Path:
        return self.root / "plots"

    def bench_file(self, prompt_len: int) -> Path:
        return self.bench_dir / f"result-{prompt_len}.jsonl"

    @property
    def prefill_log(self) -> Path:
        return self.logs_dir / "prefill.log"

    @property
    def decode_log(self) -> Path:
        return self.logs_dir / "decode.log"

    @property
    def scenario_file(self) -> Path:
        return self.root / "scenario.yaml"

    @property
    def provenance_file(self) -> Path:
        return self.root / "provenance.json"

    @property
    def summary_file(self) -> Path:
        return self.root / "summary.json"

    @property
    def report_file(self) -> Path:
        return self.root / "report.md"

    def bench_lengths(self) -> list[int]:
        """Prompt lengths that have a bench result file, ascending."""
        if not self.bench_dir.is_dir():
            return []
        found = (_BENCH.match(p.name) for p in self.bench_dir.iterdir())
        return sorted(int(m.group(1)) for m in found if m)


def why_absent(path: Path, want: str = "file") -> str:
    """Why ``path`` cannot be read as a ``want`` ("file" or "directory"); "missing" only when nothing is there,
    so a folder where a file belongs (or the reverse) is not reported as missing."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        return f"a symlink to {os.readlink(path)}, which does not resolve"
    if want == "file" and path.is_dir():
        return "is a directory, not a file"
    if want == "directory" and path.exists() and not path.is_dir():
        return "is a file, not a directory"
    return "missing"
