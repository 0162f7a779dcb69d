"""Shared set-up for the sweep tests: a short published scenario, a fake
cluster and a SweepConfig pointing at it."""

from __future__ import annotations

import logging
from pathlib import Path

from fakecluster import FakeBench, FakeCluster

from pdrepro.scenario.model import load_scenario
from pdrepro.sweep.benchcmd import BenchTarget
from pdrepro.sweep.config import SweepConfig
from pdrepro.sweep.logsource import DirLogSource


def short_scenario(lengths=(128, 256, 512)):
    """The published scenario cut to a few lengths (thresholds cut to match)."""
    sc = load_scenario("h20-qwen3-235b-1p1d")
    th = sc.thresholds
    th = th.model_copy(update=dict(
        min_bandwidth_GB_s={k: v for k, v in th.min_bandwidth_GB_s.items() if k in lengths},
        max_ttft_ms={k: v for k, v in th.max_ttft_ms.items() if k in lengths},
        # The peak is reached at long prompts only; a cut sweep cannot show it.
        min_peak_bandwidth_GB_s=None,
        min_peak_utilization_pct=None,
    ))
    sweep = sc.sweep.model_copy(update={"prompt_lens": tuple(lengths)})
    return sc.model_copy(update={"sweep": sweep, "thresholds": th})


class _Lines(logging.Handler):
    """The console lines of the package's loggers, into the list of the latest config() (a test's ``lines``)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def into(self, lines: list[str]) -> None:
        self.lines = lines
        logger = logging.getLogger("pdrepro")
        logger.setLevel(logging.INFO)
        if self not in logger.handlers:
            logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


_LINES = _Lines()


def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "ShareGPT_V3_unfiltered_cleaned_split.json"
    path.write_text('[{"id": "x", "conversations": [{"from": "human", "value": "hello"}]}]')
    return path


def config(tmp_path: Path, cluster: FakeCluster, bench: FakeBench, lines: list[str] | None = None, **kw) -> SweepConfig:
    lines = lines if lines is not None else []
    model = tmp_path / "models" / cluster.scenario.model.name
    model.mkdir(parents=True, exist_ok=True)  # the client reads its tokenizer there
    defaults = dict(
        scenario=cluster.scenario,
        out=tmp_path / "run",
        router_url=cluster.router.url,
        prefill_url=cluster.prefill.url,
        decode_url=cluster.decode.url,
        target=BenchTarget(cluster.router.url, str(tmp_path / "models" / cluster.scenario.model.name),
                           cluster.scenario.model.name, str(dataset(tmp_path))),
        launcher=bench,
        log_source=DirLogSource(cluster.log_dir),
        wait_timeout_s=5.0,
        analyze=None,
        sysfs=tmp_path / "no-sysfs",
    )
    defaults.update(kw)
    _LINES.into(lines)
    return SweepConfig(**defaults)
