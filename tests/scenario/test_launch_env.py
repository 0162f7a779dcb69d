"""launch.env: a scenario sets the variables its engine and its transfer backend read (by their prefixes),
the shared tunables and the backend's required ones; another backend's variable, or one the launch plan
sets itself, is one clear error naming who reads it or the option that sets it."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from pdrepro import backends, engines
from pdrepro.core.errors import UserError
from pdrepro.launch import plan as launch
from pdrepro.scenario.model import load_scenario


def _onebox(backend: str | None = None, env: dict | None = None, drop: tuple[str, ...] = ()) -> dict:
    data = yaml.safe_load((resources.files("pdrepro") / "scenarios" / "onebox-qwen25-0.5b.yaml").read_text())
    if backend:
        data["launch"]["transfer_backend"] = backend
    data["launch"]["env"].update(env or {})
    for key in drop:
        data["launch"]["env"].pop(key)
    return data


def _load(tmp_path, data):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_scenario(path)


def _error(tmp_path, data) -> str:
    with pytest.raises(UserError) as info:
        _load(tmp_path, data)
    message = str(info.value)
    assert str(tmp_path / "s.yaml") in message and "\n" not in message
    return message


MOONCAKE_REQUIRED = tuple(backends.backend("mooncake").required_env)


def test_the_backends_own_variables_pass():
    assert MOONCAKE_REQUIRED  # the published launch's own: held so the next tests mean something
    assert not backends.backend("nixl").required_env


def test_ucx_under_mooncake_names_the_backend_that_reads_it(tmp_path):
    message = _error(tmp_path, _onebox(env={"UCX_TLS": "tcp"}))
    assert "launch.env.UCX_TLS" in message and "nixl" in message and backends.backend("nixl").label in message


def test_mooncake_variable_under_nixl_names_mooncake(tmp_path):
    message = _error(tmp_path, _onebox("nixl", env={"MC_GID_INDEX": "3"}, drop=MOONCAKE_REQUIRED))
    assert "launch.env.MC_GID_INDEX" in message and "(mooncake)" in message


def test_nixl_requires_no_mooncake_variables_and_takes_ucx(tmp_path):
    scenario = _load(tmp_path, _onebox("nixl", env={"UCX_TLS": "tcp,cuda_copy", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "60"},
                                       drop=MOONCAKE_REQUIRED))
    assert scenario.launch.transfer_backend == "nixl"


def test_the_required_variables_are_the_backends(tmp_path):
    message = _error(tmp_path, _onebox(drop=MOONCAKE_REQUIRED[:1]))
    assert f"launch.env.{MOONCAKE_REQUIRED[0]} is missing" in message


@pytest.mark.parametrize("key,option", [
    ("CUDA_VISIBLE_DEVICES", "--gpus"), ("CUDA_DEVICE_ORDER", "--gpus"), ("MC_FORCE_TCP", "--transfer-backend"),
    (engines.engine("sglang").host_ip_env, "--prefill-ip/--decode-ip"),
])
def test_what_the_plan_sets_is_refused_with_its_option(key, option, tmp_path):
    message = _error(tmp_path, _onebox(env={key: "1"}))
    assert f"launch.env.{key} is set by the launch plan" in message and option in message


def test_an_unknown_variable_is_refused(tmp_path):
    message = _error(tmp_path, _onebox(env={"TYPO_VAR": "1"}))
    assert "launch.env.TYPO_VAR is not read" in message


def _plan(tmp_path, data, backend: str | None):
    site = launch.Site(prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path="/m",
                       dataset_path=launch.DEFAULT_DATASET, ib_devices_file=None, gpus=(0, 1), image="unused",
                       transfer_backend=backend)
    return launch.Plan(_load(tmp_path, data), site).launch_plan()


def test_the_sites_backend_gets_only_its_own_variables(tmp_path):
    data = _onebox(env={"MC_GID_INDEX": "3", "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": "60", "NCCL_IB_GID_INDEX": "3"})
    plan = _plan(tmp_path, data, "nixl")
    for server in plan.servers:
        assert not any(k.startswith(("MC_", "MOONCAKE_")) or k in MOONCAKE_REQUIRED for k in server.env), server.env
        assert server.env["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"] == "60" and server.env["NCCL_IB_GID_INDEX"] == "3"
    kept = _plan(tmp_path, data, None)
    assert all(s.env["MC_GID_INDEX"] == "3" and s.env[MOONCAKE_REQUIRED[0]] for s in kept.servers)


def test_a_nixl_scenario_run_as_mooncake_needs_mooncakes_variables(tmp_path):
    data = _onebox("nixl", env={"UCX_TLS": "tcp"}, drop=MOONCAKE_REQUIRED)
    assert all(s.env["UCX_TLS"] == "tcp" for s in _plan(tmp_path, data, None).servers)
    with pytest.raises(UserError, match=f"{MOONCAKE_REQUIRED[0]} is missing.*--transfer-backend mooncake"):
        _plan(tmp_path, data, "mooncake")
