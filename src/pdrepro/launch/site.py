"""Where a stack runs (the operator's side of a launch): addresses, paths on the nodes, GPUs, the image, and
the defaults a rendered file falls back to. The scenario says what runs; a ``Site`` says where."""

from __future__ import annotations

from dataclasses import dataclass

# As in the published commands; the GPU image puts its venv's python first on PATH.
PYTHON = "python"

# Where things are on a node unless the operator says otherwise. They are
# written into the env files so that each node's compose reads one value.
DEFAULT_MODEL_ROOT = "/models"
DEFAULT_DATASET = "/data/ShareGPT_V3_unfiltered_cleaned_split.json"
DEFAULT_IB_DEVICES = "/etc/pdrepro/ib_devices.json"
DEFAULT_LOG_DIR = "/var/log/pdrepro"
MEMLOCK_UNLIMITED = -1
# Loading a 235B model takes many minutes; a server is not unhealthy before this.
SERVER_START_SECONDS = 3600
DEFAULT_START_PERIOD = f"{SERVER_START_SECONDS}s"


@dataclass(frozen=True)
class Site:
    """Where the stack runs: each node's address, paths on the nodes, GPU ids
    per node. An address is an IP for compose; other targets may use names."""

    prefill_hosts: tuple[str, ...]
    decode_hosts: tuple[str, ...]
    model_path: str
    dataset_path: str
    # GPU-to-RDMA-device map; None leaves the choice to Mooncake (one box, TCP).
    ib_devices_file: str | None
    gpus: tuple[int, ...]
    image: str
    log_dir: str = DEFAULT_LOG_DIR
    memlock: int = MEMLOCK_UNLIMITED
    # Every server's --mem-fraction-static; None: the scenario's shared_gpu_mem_fraction when servers
    # share a GPU, else SGLang's own choice.
    mem_fraction: float | None = None
    # Appended to every server's argv after the scenario's own (e.g. kernel backends a site's wheels allow).
    extra_server_args: tuple[str, ...] = ()
    # The site's KV transfer backend (--transfer-backend, --force-tcp), over the scenario's; None keeps the scenario's.
    transfer_backend: str | None = None
    # The interpreter in every argv: the image's `python` on PATH, or the host launcher's own.
    python: str = PYTHON
