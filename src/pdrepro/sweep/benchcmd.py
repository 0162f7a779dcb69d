"""The bench client's command line, built in one place from the scenario.

The flags and their order follow the published loop, so that a run made by
``pdrepro sweep`` can be compared flag for flag with the published one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..scenario.model import Scenario, is_unbounded
from ..scenario.seams import engine_of


@dataclass(frozen=True)
class BenchTarget:
    """Where the client points: the router, the model files and the dataset."""

    base_url: str
    model_path: str
    served_model_name: str
    dataset_path: str
    tokenizer: str | None = None
    # As in the published loop; the GPU image's virtual environment provides it.
    python: str = "python"


def _number(value: float) -> str:
    if is_unbounded(value):
        return "inf"
    return repr(float(value))


def bench_argv(scenario: Scenario, prompt_len: int, target: BenchTarget, output_file: Path) -> list[str]:
    sweep = scenario.sweep
    engine = engine_of(scenario)
    argv = [
        target.python, "-m", engine.bench_module,
        "--backend", engine.bench_backend,
        "--base-url", target.base_url.rstrip("/"),
        "--model", target.model_path,
        "--served-model-name", target.served_model_name,
        "--tokenizer", target.tokenizer or target.model_path,
        "--dataset-name", "random",
        "--dataset-path", target.dataset_path,
        "--num-prompts", str(sweep.num_prompts),
        "--random-input-len", str(prompt_len),
        "--random-output-len", str(sweep.output_len),
        "--random-range-ratio", _number(sweep.random_range_ratio),
        "--request-rate", _number(sweep.request_rate),
    ]
    if sweep.max_concurrency is not None:
        argv += ["--max-concurrency", str(sweep.max_concurrency)]
    argv += [
        "--seed", str(sweep.seed),
        "--flush-cache",
        "--warmup-requests", str(sweep.warmup_requests),
        "--tokenize-prompt",
        "--output-details",
        "--output-file", str(output_file),
    ]
    return argv
