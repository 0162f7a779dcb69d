"""What one `pdrepro render` is asked to do, as a typed request (issue 33 item 3).

The command line parses into it (commands.render) and a runner that renders one job per member builds one each
(`ab --render`, `tune --render`: commands.requests), so the stage is handed the same type either way, never a word
list rebuilt from words. Each field is named as render's option stores it: the targets read a request as they read
a parsed command line. Light on purpose: the command line imports it while it builds its parser.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from .site import DEFAULT_LOG_DIR, MEMLOCK_UNLIMITED

# A run folder both a shell word and a Kubernetes mountPath carry as written: no quoting, no expansion.
_RUN_DIR = re.compile(r"/[A-Za-z0-9._/+@-]*")


def cluster_run_dir_problem(given: str) -> str:
    """What is wrong with a cluster job's run folder (``run_dir``), as the fix to print ('' when nothing)."""
    parts = PurePosixPath(given).parts
    if not _RUN_DIR.fullmatch(given) or ".." in parts or len(parts) < 3:
        return ("give an absolute folder at least two names deep, of letters, digits and . _ - + @ only (the job's "
                "shell and the Kubernetes mount take it as written)")
    return ""


@dataclass(frozen=True)
class RenderRequest:
    """One `pdrepro render`: the target and scenario, the site (addresses, model, dataset, GPUs, the servers' memory
    share and extra flags, the transfer backend, the RDMA device map), a cluster's settings, the job's run folder
    (``run_dir``) and the folder the files are written to (``out``)."""

    target: str = "compose"
    scenario: str | None = None
    prefill_ip: str | None = None
    decode_ip: str | None = None
    model: str | None = None
    dataset: str | None = None
    gpus: str | None = None
    mem_fraction: float | None = None
    server_arg: tuple[str, ...] = ()
    transfer_backend: str | None = None
    force_tcp: bool = False
    ib_devices: str | None = None
    log_dir: str = DEFAULT_LOG_DIR
    memlock: int = MEMLOCK_UNLIMITED
    namespace: str = "pdrepro"
    rdma_resource: str = "rdma/hca"
    shared_claim: str = "pdrepro-shared"
    launcher: str = "compose"
    run_dir: str | None = None
    out: str = "deploy"
    func: object = field(default=None, compare=False, repr=False)  # what the parsed command line carries

    @classmethod
    def from_args(cls, args) -> RenderRequest:
        """The request a parsed `pdrepro render` command line (or a request) holds."""
        if isinstance(args, cls):
            return args
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        values["server_arg"] = tuple(values.get("server_arg") or ())
        return cls(**values)
