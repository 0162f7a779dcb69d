"""Hostile launch environments and backend choices: a scenario's launch.env generated from every engine's and
backend's prefixes, the plan-owned variables, the shared tunable and names of no one's, under each scenario
backend, rendered with each site backend (--transfer-backend, --force-tcp, both).

The promise: `pdrepro render` exits 0 or 2 only, one line and no traceback on 2, nothing written on 2; when it
renders, no server's environment holds a variable of another backend, a plan-owned variable with a value the
plan did not set, or a required variable of a backend it does not run. The old launch passed a scenario's
MOONCAKE_PROTOCOL to any backend and had two switches for Mooncake over TCP."""

from __future__ import annotations

import contextlib
import io
import tempfile
from importlib import resources
from pathlib import Path

import yaml
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro import backends, engines
from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.scenario.model import load_scenario

ENGINE = engines.engine("sglang")
PREFIXES = sorted({p for n in backends.names() for p in backends.backend(n).env_prefixes} | set(ENGINE.env_prefixes)
                  | {"NCCL_", "CUDA_", "X_"})
OWNED = ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", ENGINE.host_ip_env,
         *{k for n in backends.names() for k in backends.backend(n).plan_env}]
REQUIRED = sorted({k for n in backends.names() for k in backends.backend(n).required_env})
KEYS = st.one_of(st.sampled_from(OWNED + REQUIRED + ["NCCL_IB_GID_INDEX"]),
                 st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES),
                           st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", min_size=1, max_size=8)))
VALUES = st.one_of(st.sampled_from(["1", "rdma", "tcp,cuda_copy", "30", "-1", ""]), st.text(max_size=6))
SITE = st.sampled_from([[], ["--force-tcp"], *(["--transfer-backend", n] for n in backends.names()),
                        ["--force-tcp", "--transfer-backend", "nixl"]])


def _prefixes_of(name: str) -> tuple[str, ...]:
    return tuple(backends.backend(name).env_prefixes)


@settings(max_examples=examples(15, deep_count=400), deadline=None)
@given(env=st.dictionaries(KEYS, VALUES, max_size=5), keep_required=st.booleans(),
       scenario_backend=st.sampled_from(backends.names()), site=SITE)
def test_render_refuses_or_renders_only_what_the_backend_reads(env, keep_required, scenario_backend, site):
    data = yaml.safe_load((resources.files("pdrepro") / "scenarios" / "onebox-qwen25-0.5b.yaml").read_text())
    data["launch"]["transfer_backend"] = scenario_backend
    data["launch"]["env"] = {**(data["launch"]["env"] if keep_required else {}), **env}
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "s.yaml", Path(tmp) / "out"
        path.write_text(yaml.safe_dump(data))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(["render", "--target", "onebox", "--scenario", str(path), "--gpus", "0,1",
                             "--out", str(out), *site])
            except SystemExit as exc:  # argparse's own refusal
                code = exc.code
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        assert code in (0, 2), (code, err.getvalue())
        assert "Traceback" not in err.getvalue()
        if code == 2:
            assert len(lines) == 1, lines
            assert not out.exists()
            return
        chosen = "mooncake_tcp" if "--force-tcp" in site else (site[1] if site else scenario_backend)
        site_backend = None if not site else chosen
        plan = launch.Plan(load_scenario(path), launch.Site(
            prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path="/m", dataset_path="/d",
            ib_devices_file=None, gpus=(0, 1), image="i", transfer_backend=site_backend)).launch_plan()
        backend = backends.backend(chosen)
        others = tuple(p for n in backends.names() if not set(_prefixes_of(n)) & set(backend.env_prefixes)
                       for p in _prefixes_of(n))
        for server in plan.servers:
            assert plan.backend == chosen
            assert not any(k.startswith(others) for k in server.env), server.env
            assert all(k in backend.required_env for k in REQUIRED if k in server.env), server.env
            for key, value in backend.plan_env.items():
                assert server.env[key] == value
            assert server.env.get(ENGINE.host_ip_env) == "127.0.0.1"
            for key in set(OWNED) - set(backend.plan_env) - {ENGINE.host_ip_env, "CUDA_VISIBLE_DEVICES",
                                                             "CUDA_DEVICE_ORDER"}:
                assert key not in server.env
