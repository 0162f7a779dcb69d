"""Peak memory of `pdrepro analyze` on a run whose prefill log is made of request-stats lines inside the sweep's
windows, far more of them than the bench completed (`make bench-analysis-memory`).

Builds the run in a temporary folder with the test suite's run builder (tests/runbuilder.py: the published
235B scenario, 50 requests per length), records each length's window in sweep-state.json as the sweep does, then
grows RUN/logs/prefill.log to SIZE_MB with further request-stats lines of every length, each stamped inside
its length's window, and runs `pdrepro analyze` on it as a child process. Prints the child's exit status, its
peak resident memory (MiB, from the kernel's count for waited-for children) and the time it took."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from runbuilder import build_run  # noqa: E402

from pdrepro.analysis.summarize import nearest_length  # noqa: E402
from pdrepro.parsers.reqstats import parse_line  # noqa: E402
from pdrepro.scenario.model import load_scenario  # noqa: E402

SCENARIO = "h20-qwen3-235b-1p1d"
_RID = re.compile(r"rid=([^,]+), bootstrap_room=(\d+)")


def build(root: Path, size_mb: int) -> tuple[Path, int]:
    scenario = load_scenario(SCENARIO)
    run = build_run(root / "run", scenario)
    lengths = list(scenario.sweep.prompt_lens)
    by_length: dict[int, list[str]] = {L: [] for L in lengths}
    stamps: dict[int, list[dt.datetime]] = {L: [] for L in lengths}
    for line in run.prefill_log.read_text().splitlines():
        stat = parse_line(line)
        if stat is None or stat.is_health_check or stat.timestamp is None:
            continue
        L = nearest_length(stat.input_len, lengths)
        if L is not None:
            by_length[L].append(line)
            stamps[L].append(dt.datetime.fromisoformat(stat.timestamp).replace(tzinfo=dt.timezone.utc))
    # The windows as the sweep records them: when each length ended and how long it ran.
    state = {"lengths": {str(L): {"status": "done", "at": max(s).strftime("%Y-%m-%dT%H:%M:%S%z"),
                                  "seconds": (max(s) - min(s)).total_seconds() + 1} for L, s in stamps.items()}}
    run.sweep_state_file.write_text(json.dumps(state, indent=2))
    # Further lines of every length, copies of the length's own lines (so inside its window) with fresh ids,
    # written before the sweep's own lines of the length would be too (appended at the end here: the log's
    # last start is still the one that served the sweep).
    target = size_mb * (1 << 20)
    extra = 0
    with run.prefill_log.open("a") as log:
        written = run.prefill_log.stat().st_size
        while written < target:
            for L in lengths:
                for line in by_length[L]:
                    extra += 1
                    text = _RID.sub(f"rid=x{extra:09d}, bootstrap_room={9_000_000_000_000_000_000 + extra}", line) + "\n"
                    log.write(text)
                    written += len(text)
    return run.root, extra


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=500, help="size of the prefill log (default %(default)s MB)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pdrepro-bench-memory-") as tmp:
        started = time.monotonic()
        run, extra = build(Path(tmp), args.size_mb)
        size = (run / "logs" / "prefill.log").stat().st_size
        print(f"built {run}: prefill.log {size / (1 << 20):.0f} MiB, {extra} request-stats lines beyond the sweep's "
              f"({time.monotonic() - started:.0f} s)", flush=True)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pdrepro", "analyze", str(run)], capture_output=True, text=True)
        took = time.monotonic() - started
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
        print(f"pdrepro analyze: exit {proc.returncode} in {took:.0f} s, peak RSS {peak_mib:.0f} MiB")
        summary = run / "summary.json"
        issues = json.loads(summary.read_text()).get("issues", []) if summary.is_file() else []
        extra = [i for i in issues if i.get("kind") == "extra_requests"]
        print(f"  {len(extra)} length(s) warned about extra request-stats lines"
              + (f", e.g.: {extra[0].get('message', '')[:400]}" if extra else ""))
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-2000:])
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
