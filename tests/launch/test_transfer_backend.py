"""The site's transfer backend: `--transfer-backend NAME` overrides the scenario's launch.transfer_backend for
every launch (render's targets, the host launcher), and `--force-tcp` is its alias for the TCP-only backend:
one setting, rendered to the same files."""

from __future__ import annotations

from typing import get_args

import pytest

from pdrepro import backends, engines
from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.scenario.launch_section import Engine, TransferBackendName
from pdrepro.scenario.model import load_scenario

SCENARIO = "onebox-qwen25-0.5b"
TCP = next(n for n in backends.names() if backends.backend(n).tcp_only)


def test_the_scenarios_literals_are_the_registries_names():
    assert set(get_args(TransferBackendName)) == set(backends.names())
    assert set(get_args(Engine)) == set(engines.names())


def _render(tmp_path, name, *extra) -> dict[str, str]:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    out = tmp_path / name
    argv = ["render", "--target", "onebox", "--scenario", SCENARIO, "--model", str(model), "--gpus", "0,1",
            "--out", str(out), *extra]
    assert main(argv) == 0
    # The files name their own folder (the commands print where the env file is): compare without it.
    return {p.name: p.read_text().replace(str(out), "OUT") for p in sorted(out.iterdir())}


def test_force_tcp_is_the_tcp_backend_by_name(tmp_path):
    alias = _render(tmp_path, "alias", "--force-tcp")
    named = _render(tmp_path, "named", "--transfer-backend", TCP)
    plain = _render(tmp_path, "plain")
    assert alias == named
    assert alias != plain
    # The servers' environment is in the rendered compose file, from the backend's plan_env.
    assert '\n      MC_FORCE_TCP: "1"\n' in alias["onebox.yaml"] and "MC_FORCE_TCP" not in plain["onebox.yaml"]
    # A TCP-only backend gets no override mapping the RDMA devices.
    assert "onebox.rdma.yaml" in plain and "onebox.rdma.yaml" not in alias


def _plan(backend: str | None) -> launch.LaunchPlan:
    site = launch.Site(prefill_hosts=("127.0.0.1",), decode_hosts=("127.0.0.1",), model_path="/m",
                       dataset_path=launch.DEFAULT_DATASET, ib_devices_file=None, gpus=(0, 1), image="unused",
                       transfer_backend=backend)
    return launch.Plan(load_scenario(SCENARIO), site).launch_plan()


@pytest.mark.parametrize("name", backends.names())
def test_the_plan_runs_the_chosen_backend(name):
    plan = _plan(name)
    chosen, eng = backends.backend(name), engines.engine(load_scenario(SCENARIO).launch.engine)
    assert plan.backend == name and plan.engine == eng.name
    for server in plan.servers:
        flag = server.argv[server.argv.index("--disaggregation-transfer-backend") + 1]
        assert flag == eng.backend_flags[name]
        for key, value in chosen.plan_env.items():
            assert server.env[key] == value
        others = {k for n in backends.names() for k in backends.backend(n).plan_env if k not in chosen.plan_env}
        assert not others & set(server.env)


def test_the_site_keeps_the_scenarios_backend_unless_told():
    assert _plan(None).backend == load_scenario(SCENARIO).launch.transfer_backend


@pytest.mark.parametrize("args,expected", [
    (["--force-tcp", "--transfer-backend", "nixl"], "--force-tcp and --transfer-backend nixl"),
    (["--target", "compose", "--transfer-backend", TCP], f"--transfer-backend {TCP}: only the one-box target"),
])
def test_bad_backend_choice_is_one_line(args, expected, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["render", "--target", "onebox", "--scenario", SCENARIO, "--gpus", "0,1", "--out", str(out)]
    assert main([*argv, *args]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.strip()]
    assert expected in err[-1], err
    assert "Traceback" not in "".join(err)
    assert not out.exists()


@pytest.mark.parametrize("command", [["render"], ["stack", "up"]])
def test_every_launch_takes_the_option(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    assert "--transfer-backend" in text and "--force-tcp" in text


def test_an_unknown_backend_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["render", "--target", "onebox", "--transfer-backend", "nosuch"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "invalid choice: 'nosuch'" in err[-1] and all(n in err[-1] for n in backends.names())
