"""launch.env against the generated knob lists: a variable the pinned SGLang or Mooncake reads passes (the
issue's thread pool and queue size among them), a name under a listed prefix that the pinned source does not
read is refused on one line naming it, the nearest known names and the list's source; the plan's own keep
their error naming the option; UCX_* stays a prefix. And the lists themselves: each names the pinned source,
each knob its reader, file and RDMA judgement, as `pdrepro knobs` prints them."""

from __future__ import annotations

import json
from importlib import resources

import pytest
import yaml

from pdrepro import backends, engines
from pdrepro.cli import main
from pdrepro.core.errors import UserError
from pdrepro.core.pins import load_pins
from pdrepro.scenario import knobs
from pdrepro.scenario.model import load_scenario

ISSUE_EXAMPLE = {"SGLANG_DISAGGREGATION_THREAD_POOL_SIZE": "16", "SGLANG_DISAGGREGATION_QUEUE_SIZE": "1"}


def _onebox(tmp_path, env: dict, backend: str | None = None) -> str:
    data = yaml.safe_load((resources.files("pdrepro") / "scenarios" / "onebox-qwen25-0.5b.yaml").read_text())
    if backend == "nixl":
        data["launch"]["env"] = {}
    if backend:
        data["launch"]["transfer_backend"] = backend
    data["launch"]["env"].update(env)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _refusal(tmp_path, env: dict, backend: str | None = None) -> str:
    path = _onebox(tmp_path, env, backend)
    with pytest.raises(UserError) as info:
        load_scenario(path)
    message = str(info.value)
    assert path in message and "\n" not in message
    return message


def test_the_issues_thread_pool_and_queue_size_are_accepted(tmp_path):
    scenario = load_scenario(_onebox(tmp_path, ISSUE_EXAMPLE))
    assert {k: scenario.launch.env[k] for k in ISSUE_EXAMPLE} == ISSUE_EXAMPLE


@pytest.mark.parametrize("backend", ["mooncake", "mooncake_tcp"])
def test_every_listed_knob_of_the_engine_and_backend_passes(backend, tmp_path):
    owned = {"MC_FORCE_TCP"}  # listed (Mooncake reads it) but the plan's: --transfer-backend sets it
    env = {k.name: "1" for k in knobs.knobs() if k.name not in owned}
    assert len(env) > 100
    assert load_scenario(_onebox(tmp_path, env, backend)).launch.env.keys() >= env.keys()


@pytest.mark.parametrize("typo,meant", [
    ("SGLANG_DISAGGREGATION_THREADPOOL_SIZE", "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE"),
    ("SGLANG_DISAGGREGATION_QUEUE_SIZES", "SGLANG_DISAGGREGATION_QUEUE_SIZE"),
    ("SGLANG_MOONCAKE_SEND_AUX", "SGLANG_MOONCAKE_SEND_AUX_TCP"),
    ("MC_NUM_QP_PER_EPS", "MC_NUM_QP_PER_EP"),
    ("MC_SLICESIZE", "MC_SLICE_SIZE"),
])
def test_a_name_the_pinned_source_does_not_read_is_refused_with_the_nearest(typo, meant, tmp_path):
    message = _refusal(tmp_path, {typo: "4"})
    listed = knobs.covering(typo)
    assert listed is not None
    assert f"launch.env.{typo} is no variable {listed.source} reads" in message
    assert meant in message and listed.file in message


def test_a_name_near_nothing_says_so(tmp_path):
    message = _refusal(tmp_path, {"MC_QQQQQQQQQQQQQQQQQ": "1"})
    assert "none of its" in message and "mooncake.json" in message


@pytest.mark.parametrize("key,option", [("MC_FORCE_TCP", "--transfer-backend"), ("CUDA_VISIBLE_DEVICES", "--gpus"),
                                        ("SGLANG_HOST_IP", "--prefill-ip/--decode-ip")])
def test_the_plans_own_keep_their_option(key, option, tmp_path):
    message = _refusal(tmp_path, {key: "1"})
    assert f"launch.env.{key} is set by the launch plan" in message and option in message


def test_ucx_stays_a_prefix_under_nixl(tmp_path):
    env = {"UCX_TLS": "rc,cuda_copy", "UCX_RNDV_THRESH": "8192", "UCX_ANYTHING_AT_ALL": "1", **ISSUE_EXAMPLE}
    assert load_scenario(_onebox(tmp_path, env, "nixl")).launch.env["UCX_ANYTHING_AT_ALL"] == "1"


def test_an_engine_variable_outside_the_listed_prefixes_still_passes(tmp_path):
    # SGLang reads hundreds of SGLANG_* outside its transfer path; only the listed prefixes are held to a list.
    assert knobs.covering("SGLANG_SOMETHING_ELSE") is None
    load_scenario(_onebox(tmp_path, {"SGLANG_SOMETHING_ELSE": "1"}))


# ---- the data ---------------------------------------------------------------

def test_each_list_names_the_pinned_source():
    pins = load_pins()
    by_reader = {kl.reader: kl for kl in knobs.lists()}
    assert by_reader["sglang"].source == f"sgl-project/sglang@v{pins['SGLANG_NEAREST_RELEASE']}"
    assert by_reader["mooncake"].source == f"kvcache-ai/Mooncake@{pins['MOONCAKE_COMMIT']}"
    for name in (*engines.names(), *backends.names()):
        part = engines.engine(name) if name in engines.names() else backends.backend(name)
        if part.knob_file:
            data = json.loads((resources.files("pdrepro") / knobs.DATA_FOLDER / part.knob_file).read_text())
            assert data["generated_by"].startswith("scripts/knobgen.py")
            names = [k["name"] for k in data["knobs"]]
            assert names == sorted(names) and len(set(names)) == len(names)
            assert all(n.startswith(part.env_prefixes) for n in names), name


def test_each_knob_says_its_reader_source_and_judgement():
    pool = knobs.lookup("SGLANG_DISAGGREGATION_THREAD_POOL_SIZE")
    assert pool is not None and pool.reader == "sglang" and pool.reader_kind == "engine" and pool.restart
    assert pool.source.endswith(":python/sglang/srt/disaggregation/mooncake/conn.py")
    queue = knobs.lookup("SGLANG_DISAGGREGATION_QUEUE_SIZE")
    assert queue is not None and (queue.default, queue.type) == ("4", "int")
    qp = knobs.lookup("MC_NUM_QP_PER_EP")
    assert qp is not None and qp.reader == "mooncake" and qp.reader_kind == "backend"
    assert qp.rdma_only and qp.default == "2" and "rdma_transport" in qp.evidence
    pooled = knobs.lookup("MC_TCP_ENABLE_CONNECTION_POOL")
    assert pooled is not None and not pooled.rdma_only and pooled.only_in == ("tcp",)
    assert knobs.lookup("UCX_TLS") is None and knobs.lookup("MC_NOT_A_KNOB") is None


def test_tcp_cannot_judge_names_the_rdma_only_and_no_other():
    why = knobs.tcp_cannot_judge("MC_NUM_QP_PER_EP")
    assert why is not None and "RDMA" in why and "MC_NUM_QP_PER_EP" in why
    assert knobs.tcp_cannot_judge("UCX_RC_TIMEOUT") is not None
    for name in ("MC_TCP_ENABLE_CONNECTION_POOL", "SGLANG_DISAGGREGATION_THREAD_POOL_SIZE", "UCX_TLS", "MC_NOT_A_KNOB"):
        assert knobs.tcp_cannot_judge(name) is None, name
    judged = [k.name for k in knobs.knobs() if knobs.tcp_cannot_judge(k.name)]
    assert "MC_MTU" in judged and "MC_TCP_PROTO" not in judged
    assert all(knobs.lookup(n).rdma_only or knobs.lookup(n).only_in for n in judged)


# ---- pdrepro knobs ----------------------------------------------------------

def test_the_command_prints_every_knob_with_reader_default_and_source(capsys):
    assert main(["knobs"]) == 0
    out = capsys.readouterr().out
    for k in knobs.knobs():
        assert k.name in out
    assert "sgl-project/sglang@v" in out and "kvcache-ai/Mooncake@" in out and "UCX_*" in out
    assert "MC_FORCE_TCP (--transfer-backend)" in out


def test_the_command_filters_and_speaks_json(capsys):
    assert main(["knobs", "--reader", "mooncake_tcp", "--rdma-only", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    names = [k["name"] for k in data["knobs"]]
    assert "MC_NUM_QP_PER_EP" in names and all(k["rdma_only"] and k["reader"] == "mooncake" for k in data["knobs"])
    assert not any(n.startswith("SGLANG_") for n in names)
    assert main(["knobs", "--reader", "nixl"]) == 0
    assert "UCX_*" in capsys.readouterr().out
