"""Where things live in a run directory; every step reads and writes through this.

RUN/
  scenario.yaml            the scenario the run used (resolved, canonical)
  provenance.json          images, commits, hosts, environment
  bench/result-<L>.jsonl   bench client output, one file per prompt length
  logs/prefill.log         prefill server log (ReqTimeStats lines); with several prefill servers the
                           others are prefill-1.log, prefill-2.log, ... (server_log_name)
  logs/decode.log          decode server log (decode-1.log, ... likewise)
  metrics/*.prom           optional /metrics scrapes (metrics/raw/: each scrape as taken)
  raw/<role>.json          a smoke's agents' own results
  counters/<L>.json        RDMA port counters of each node before and after length L
  sweep-state.json         per-length outcome of the sweep (what a rerun resumes from)
  baseline.json            the fabric's measured ceiling (`pdrepro baseline --out RUN`)
  stack.json               the processes `pdrepro stack up` started (not an input of the analysis)
  baseline/                the raw outputs of the tools that measured it
  engine-ceiling.json, engine-ceiling/result.json   the Mooncake engine alone on the run's box
  summary.json             analysis result (machine-readable)
  report.md, summary.csv, plots/*.png   analysis result (for people)

A comparison run holds one such folder per configuration (``configuration``).

RunDir is the one authority for these files: where each lives, and, for the JSON records (sweep state,
counters, baseline, provenance, summary), reading and writing them as their models (this package's
sweepstate, counters, baseline and provenance modules; summarymodel). Producers (the sweep, the baseline,
the smoke, the analysis) and readers (the analysis, the gates) go through it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from ..core import advice, runfile
from ..core.errors import UserError
from ..core.strictmodel import load
from .baseline import BaselineFile
from .contract import dumps_json, unwritable, write_atomic, write_json_atomic
from .counters import CountersRecord
from .engineceiling import load_ceiling as load_engine_ceiling
from .inputsig import STACK_FILE as STACK_FILE  # re-exported: the run's paths are named here
from .inputsig import signature
from .provenance import Provenance
from .summarymodel import Summary, model_for
from .sweepstate import SweepStateFile

_BENCH = re.compile(r"^result-(\d+)\.jsonl$")


def server_log_name(role: str, index: int) -> str:
    """The log file of a role's server ``index`` (over all the role's servers, node-major), the same on every
    target and in the run: the first keeps ``<role>.log`` so a 1P1D run reads as it always did, the others
    add their index, so every server of a role can write into one shared folder."""
    return f"{role}.log" if index == 0 else f"{role}-{index}.log"


def server_log_index(role: str, file_name: str) -> int | None:
    """The server index a file named by ``server_log_name`` carries, None for any other file."""
    m = re.fullmatch(rf"{re.escape(role)}(?:-([1-9]\d*))?\.log", file_name)
    return None if m is None else int(m.group(1) or 0)



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
        return self.role_log("prefill")

    @property
    def decode_log(self) -> Path:
        return self.role_log("decode")

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

    @property
    def summary_csv(self) -> Path:
        return self.root / "summary.csv"

    @property
    def sweep_state_file(self) -> Path:
        return self.root / "sweep-state.json"

    @property
    def sweep_lock_file(self) -> Path:
        """Held (flock) by the one sweep running on this directory (sweep.runlock)."""
        return self.root / ".sweep.lock"

    @property
    def baseline_file(self) -> Path:
        return self.root / "baseline.json"

    @property
    def baseline_outputs_dir(self) -> Path:
        """The raw outputs of `pdrepro baseline`'s tools, kept for whoever reads the ceiling."""
        return self.root / "baseline"

    def partial_bench_file(self, prompt_len: int) -> Path:
        """Where the client writes a length's result until it is known complete."""
        return self.bench_dir / f".result-{prompt_len}.jsonl.partial"

    def set_aside_bench_file(self, prompt_len: int, why: str) -> Path:
        """Where a length's result that may not count is kept (``why``: "invalid" or "failed")."""
        return self.bench_dir / f"result-{prompt_len}.jsonl.{why}"

    def metrics_file(self, role: str, prompt_len: int) -> Path:
        """A role's /metrics difference over one length."""
        return self.metrics_dir / f"{role}-{prompt_len}.prom"

    @property
    def raw_metrics_dir(self) -> Path:
        return self.metrics_dir / "raw"

    def raw_metrics_file(self, role: str, when: str, prompt_len: int) -> Path:
        """A role's /metrics scrape ``when`` ("before" or "after") one length."""
        return self.raw_metrics_dir / f"{role}-{when}-{prompt_len}.prom"

    @property
    def raw_dir(self) -> Path:
        """The smoke agents' own result files."""
        return self.root / "raw"

    def agent_result(self, role: str) -> Path:
        return self.raw_dir / f"{role}.json"

    def role_log(self, role: str) -> Path:
        """The log of the role's first (or only) server."""
        return self.server_log(role, 0)

    def server_log(self, role: str, index: int) -> Path:
        return self.logs_dir / server_log_name(role, index)

    def role_logs(self, role: str) -> list[Path]:
        """Every server's log of the role that the run holds, by server index (empty when none)."""
        if not self.logs_dir.is_dir():
            return []
        # Anything there but a folder counts (a FIFO, a device): the log reader refuses it by name, rather
        # than the run being told the log is missing.
        found = {server_log_index(role, p.name): p for p in self.logs_dir.iterdir() if p.exists() and not p.is_dir()}
        return [found[i] for i in sorted(i for i in found if i is not None)]

    def configuration(self, name: str) -> RunDir:
        """A comparison's run of one configuration, nested in this one."""
        return RunDir(self.root / name)

    def bench_lengths(self) -> list[int]:
        """Prompt lengths that have a bench result file, ascending."""
        if not self.bench_dir.is_dir():
            return []
        found = (_BENCH.match(p.name) for p in self.bench_dir.iterdir())
        return sorted(int(m.group(1)) for m in found if m)

    def inputs_signature(self) -> str:
        """Names, sizes and mtimes of every input file in the run (inputsig.signature)."""
        return signature(self.root, self.plots_dir)

    # ---- the run's JSON records, as their models ----------------------------------------------------

    def read_sweep_state(self) -> SweepStateFile:
        """The sweep's per-length outcomes; an empty record when there is none yet, or when the file is not
        one (a rerun then starts it afresh: the bench files, not this record, say what is complete)."""
        path = self.sweep_state_file
        if not _present(path):
            return SweepStateFile()
        try:
            return SweepStateFile.model_validate(runfile.read_json(path))
        except (ValueError, ValidationError):
            return SweepStateFile()

    def write_sweep_state(self, state: SweepStateFile) -> None:
        path = self.sweep_state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, state.to_json(), indent=2, sort_keys=True)

    def read_counters(self, prompt_len: int) -> CountersRecord | None:
        """The counter record of one length, None when the sweep left none; a file that is no JSON is a
        ValueError (UnicodeDecodeError included), one without a 'nodes' object a ValidationError."""
        path = self.counters_file(prompt_len)
        if not _present(path):
            return None
        return CountersRecord.model_validate(runfile.read_json(path))

    def write_counters(self, record: CountersRecord) -> None:
        self.counters_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.counters_file(int(record.prompt_len)), record.to_json(), indent=2, sort_keys=True)

    def read_baseline(self) -> BaselineFile | None:
        """What `pdrepro baseline --out RUN` left here, None when it has not run."""
        path = self.baseline_file
        if not _present(path):
            return None
        try:
            return BaselineFile.model_validate(runfile.read_json(path))
        except (OSError, ValueError, ValidationError) as exc:
            why = f"{exc.error_count()} field(s) of the wrong type" if isinstance(exc, ValidationError) else exc
            raise UserError(f"{path}: unreadable ({why}); re-run `{advice.baseline(self.root)}` (its server side "
                            f"first, on {advice.PEER}) or delete the file") from None

    def baseline_ceiling(self, line_rate_GB_s: float | None = None) -> float | None:
        """The fabric's measured ceiling (decimal GB/s) the baseline left here, or None (see BaselineFile.ceiling)."""
        record = self.read_baseline()
        return None if record is None else record.ceiling(self.baseline_file, self.root, line_rate_GB_s)

    def write_baseline(self, record: BaselineFile) -> None:
        write_json_atomic(self.baseline_file, record.to_json(), self.root, indent=2)

    def read_provenance(self) -> Provenance | None:
        """The run's provenance, None when absent or not a JSON object; unparsable JSON is a ValueError."""
        path = self.provenance_file
        if not _present(path):
            return None
        data = runfile.read_json(path)
        return Provenance(data) if isinstance(data, dict) else None

    def write_provenance(self, record: Provenance, *, sort_keys: bool = False) -> None:
        write_json_atomic(self.provenance_file, record.to_json(), indent=2, sort_keys=sort_keys)

    def summary_text(self, summary: dict, *, sort_keys: bool = False) -> str:
        """summary.json's text for ``summary`` (summarymodel.build's form): strict JSON, a NaN refused by name."""
        return dumps_json(summary, self.summary_file, indent=2, sort_keys=sort_keys)

    def write_summary(self, summary: dict, *, sort_keys: bool = False) -> None:
        """summary.json, written whole or not at all (a comparison's is sorted, as it always was)."""
        text = self.summary_text(summary, sort_keys=sort_keys)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise unwritable(self.summary_file, exc, self.root) from None
        write_atomic(self.summary_file, text, self.root)

    def read_stored_summary(self) -> dict | None:
        """summary.json as stored, for comparing with a fresh analysis; None when absent or not a JSON object."""
        try:
            data = runfile.read_json(self.summary_file)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def read_summary(self, data: dict | None = None, fix: str | None = None) -> Summary:
        """summary.json (or ``data`` read from it) as the model; a summary of another shape is one line naming
        the file and the key (with ``fix`` at its end)."""
        data = self.read_stored_summary() if data is None else data
        return load(model_for(data) if isinstance(data, dict) else Summary, data, str(self.summary_file), fix=fix)

    def read_engine_ceiling(self):
        """The engine alone on the run's box (engine-ceiling/result.json of gpu-check, else engine-ceiling.json),
        as engineceiling.load_ceiling gives it; None without one. Damage is engineceiling.CeilingError."""
        return load_engine_ceiling(self.root)

    def metrics_files(self) -> list[Path]:
        """The /metrics differences of the run (one per role and length), by name; empty without metrics/."""
        if not self.metrics_dir.is_dir():
            return []
        return sorted(p for p in self.metrics_dir.iterdir() if p.is_file())


def _present(path: Path) -> bool:
    """Whether the run holds something at ``path``: anything there but a dangling link counts, so a FIFO or
    a folder where a record belongs is refused by the reader by name instead of passing for no record."""
    if not os.path.lexists(path):
        return False
    if path.is_symlink() and not path.exists():
        raise UserError(f"{path}: {why_absent(path)}; put the file itself there, or remove the link")
    return True


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
