"""The in-container side of the smoke test.

``target`` plays the prefill node (``target.py``): it holds one buffer of the
largest KV size, filled with the plan's pattern, registered with the Mooncake
Transfer Engine, and also served over a plain TCP socket. ``initiator`` plays
the decode node (``initiator.py``): it pulls each KV-sized prefix through the
engine and through the socket (``measure.py``), checks every received byte
against the pattern's digest, and writes the timings as JSON. The two meet
through a small HTTP control endpoint.

Run as ``python -m pdrepro.smoke.agent target|initiator``; settings come from
the environment that ``compose/smoke.yaml`` passes (``settings.py``).
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import UserError
from . import nixlpath
from .initiator import run_initiator
from .output import say
from .settings import Settings
from .target import run_target

ROLES = {"target": "prefill", "initiator": "decode"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pdrepro.smoke.agent")
    parser.add_argument("role", choices=tuple(ROLES))
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        settings.results.mkdir(parents=True, exist_ok=True)
        code = run_target(settings) if args.role == "target" else run_initiator(settings)
    except (UserError, RuntimeError) as exc:
        say(ROLES[args.role], f"error: {exc}")
        code = 3
    return nixlpath.leave(code)


if __name__ == "__main__":
    sys.exit(main())
