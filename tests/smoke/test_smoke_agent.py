"""The agents' entry point, as compose/smoke.yaml starts it."""

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("role,side", [("target", "prefill"), ("initiator", "decode")])
def test_bad_setting_is_one_error_line_with_the_side(role, side):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SMOKE_")}
    env["SMOKE_TRANSPORT"] = "infiniband"
    out = subprocess.run([sys.executable, "-m", "pdrepro.smoke.agent", role], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 3
    assert out.stdout.strip() == f"[smoke {side}] error: SMOKE_TRANSPORT='infiniband'; use auto, tcp or rdma"
    assert "Traceback" not in out.stderr
