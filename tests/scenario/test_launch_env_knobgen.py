"""scripts/knobgen.py (`make knobs`) on fixture source trees built here (made-up code shaped like the two
projects' layouts, no upstream text): which variables it lists, from which file, with which default, and its
RDMA judgement traced through the configuration field a variable sets; and what it leaves out (the encoder,
other vendors' transports, tests, the store)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KNOBGEN = REPO / "scripts" / "knobgen.py"

FIXTURE_SGLANG = {
    "srt/environ.py": (
        "class Envs:\n"
        "    SGLANG_DISAGGREGATION_FIXTURE_POOL = EnvInt(7)\n"
        "    SGLANG_DISAGGREGATION_FIXTURE_UNUSED = EnvFloat(1.5)\n"
        "    SGLANG_MOONCAKE_FIXTURE_FLAG = EnvBool(False)\n"
        "    SGLANG_DISAGG_FIXTURE_COMPUTED = EnvInt(None)\n"
        "    SGLANG_FIXTURE_ELSEWHERE = EnvStr('x')\n"
        "    SGLANG_FIXTURE_READ_IN_PATH = EnvStr('y')\n"),
    "srt/disaggregation/mooncake/conn.py": (
        "import os\nfrom sglang.srt.environ import envs\n"
        "pool = envs.SGLANG_DISAGGREGATION_FIXTURE_POOL.get()\n"
        "other = envs.SGLANG_FIXTURE_READ_IN_PATH.get()\n"
        "direct = os.getenv('SGLANG_FIXTURE_DIRECT', '3')\n"
        "gpus = os.environ['CUDA_VISIBLE_DEVICES']\n"),
    "srt/disaggregation/encode_server.py": "from x import envs\nt = envs.SGLANG_FIXTURE_ENCODER_ONLY.get()\n",
    "srt/disaggregation/ascend/conn.py": "import os\np = os.getenv('SGLANG_FIXTURE_ASCEND_ONLY')\n",
    "srt/disaggregation/broken.py": "def (:\n",  # a file that does not parse is skipped, not fatal
    # The server's flags: fields with CLI metadata (a bare help string, an Arg with aliases or another name,
    # one without a CLI), flags added by hand in add_cli_args (one with its own dest), and the parser it builds.
    "srt/server_args.py": (
        "import argparse\nimport dataclasses\nfrom x import A, Arg\n\n"
        "@dataclasses.dataclass\nclass ServerArgs:\n"
        "    fixture_path: A[str, Arg(help='h', aliases=['--fixture'])]\n"
        "    fixture_size: A[int, 'help']\n"
        "    fixture_named: A[int, Arg(cli_name='--fixture-other-name')] = 1\n"
        "    fixture_hidden: A[int, Arg(no_cli=True)] = 0\n"
        "    fixture_plain: int = 0\n\n"
        "    @staticmethod\n    def add_cli_args(parser):\n"
        "        parser.add_argument('--fixture-by-hand', type=str)\n"
        "        parser.add_argument('--fixture-old', dest='fixture_size', action='store_true')\n\n"
        "def prepare_server_args(argv):\n"
        "    parser = argparse.ArgumentParser(prog='fixture')\n    ServerArgs.add_cli_args(parser)\n"),
}

FIXTURE_MOONCAKE = {
    "mooncake-common/src/environ.cpp": ('void Environ::Load() {\n  qp_count_ = GetInt("MC_FIXTURE_QP", 2);\n'
                                        '  log_name_ = GetString("MC_FIXTURE_LOG", "INFO");\n}\n'),
    "mooncake-common/include/environ.h": "class Environ { int qp_count_; std::string log_name_; };\n",
    "mooncake-transfer-engine/src/transport/rdma_transport/rdma_endpoint.cpp":
        "int n = Environ::Get().qp_count_ + config.sge_limit;\n",
    "mooncake-transfer-engine/src/logger.cpp": "auto level = Environ::Get().log_name_;\n",
    "mooncake-transfer-engine/src/transport/tcp_transport/tcp_transport.cpp":
        'if (getenv("MC_FIXTURE_TCP_POOL")) { pool = true; }\n',
    "mooncake-transfer-engine/src/config.cpp": (
        'const char *e = std::getenv("MC_FIXTURE_SGE");\nif (e) { config.sge_limit = atoi(e); }\n'
        'const char *f = std::getenv("MC_FIXTURE_OTHER");\nif (f) { config.port = atoi(f); }\n'),
    "mooncake-transfer-engine/src/topology.cpp":
        '#include <infiniband/verbs.h>\nconst char *w = std::getenv("MC_FIXTURE_FILTER");\n',
    "mooncake-transfer-engine/tests/knob_test.cpp": 'setenv("X", "1"); getenv("MC_FIXTURE_TESTONLY");\n',
    "mooncake-store/src/client.cpp": 'getenv("MC_FIXTURE_STORE");\n',
    "mooncake-integration/transfer_engine/binding.cpp": 'if (getenv("MC_FIXTURE_TIMEOUT")) {}\n',
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _generate(tmp_path: Path, sglang_layout: str = "python/sglang") -> dict[str, dict]:
    sglang = _tree(tmp_path / "fixture-sglang", {f"{sglang_layout}/{k}": v for k, v in FIXTURE_SGLANG.items()})
    if sglang_layout == "sglang":  # a wheel carries its metadata folder beside the package
        _tree(sglang, {"sglang-0.0.1.dist-info/METADATA": "Name: fixture\n"})
    mooncake = _tree(tmp_path / "fixture-mooncake", FIXTURE_MOONCAKE)
    out = tmp_path / "knobdata"
    done = subprocess.run([sys.executable, str(KNOBGEN), "--sglang-src", str(sglang), "--sglang-ref", "v0.0.1",
                           "--mooncake-src", str(mooncake), "--mooncake-ref", "f" * 40, "--out", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {f.stem: json.loads(f.read_text()) for f in out.glob("*.json")}


def _by_name(data: dict) -> dict[str, dict]:
    return {k["name"]: k for k in data["knobs"]}


@pytest.mark.parametrize("layout", ["python/sglang", "sglang"])  # a git checkout, an unpacked wheel
def test_sglang_list_from_the_settings_module_and_the_transfer_path(layout, tmp_path):
    data = _generate(tmp_path, layout)["sglang"]
    tree = "a source checkout" if layout.startswith("python/") else "the release wheel, unpacked (sglang-0.0.1.dist-info)"
    assert data["source"] == {"repo": "sgl-project/sglang", "ref": "v0.0.1", "tree": tree}
    assert data["reader"] == "sglang"
    got = _by_name(data)
    assert sorted(got) == ["SGLANG_DISAGGREGATION_FIXTURE_POOL", "SGLANG_DISAGGREGATION_FIXTURE_UNUSED",
                           "SGLANG_DISAGG_FIXTURE_COMPUTED", "SGLANG_FIXTURE_DIRECT", "SGLANG_FIXTURE_READ_IN_PATH",
                           "SGLANG_MOONCAKE_FIXTURE_FLAG"]
    pool = got["SGLANG_DISAGGREGATION_FIXTURE_POOL"]
    assert (pool["type"], pool["default"], pool["file"]) == \
        ("int", "7", "python/sglang/srt/disaggregation/mooncake/conn.py")
    assert (got["SGLANG_DISAGGREGATION_FIXTURE_UNUSED"]["default"], got["SGLANG_MOONCAKE_FIXTURE_FLAG"]["default"]) \
        == ("1.5", "false")
    assert got["SGLANG_DISAGGREGATION_FIXTURE_UNUSED"]["file"] == "python/sglang/srt/environ.py"
    assert got["SGLANG_DISAGG_FIXTURE_COMPUTED"]["default"] is None  # computed at run time: no default stated
    assert not any(k["rdma_only"] for k in data["knobs"])


def test_server_flags_with_every_alias_from_each_tree(tmp_path):
    data = _generate(tmp_path)["sglang-flags"]
    (tree,) = data["trees"]
    assert (tree["ref"], tree["file"], tree["allow_abbrev"]) == ("v0.0.1", "python/sglang/srt/server_args.py", True)
    assert {f["dest"]: f["options"] for f in tree["flags"]} == {
        "fixture_path": ["--fixture", "--fixture-path"], "fixture_size": ["--fixture-old", "--fixture-size"],
        "fixture_named": ["--fixture-other-name"], "fixture_by_hand": ["--fixture-by-hand"],
        "help": ["--help", "-h"]}
    # The pin's tree beside the release's, each named; a parser built without abbreviations says so.
    pin = _tree(tmp_path / "pin", {f"python/sglang/{k}": v.replace("prog='fixture'", "prog='f', allow_abbrev=False")
                                   for k, v in FIXTURE_SGLANG.items()})
    out = tmp_path / "two"
    done = subprocess.run([sys.executable, str(KNOBGEN), "--sglang-src", str(tmp_path / "fixture-sglang"),
                           "--sglang-ref", "v0.0.1", "--sglang-flags-src", f"{'a' * 40}={pin}",
                           "--mooncake-src", str(tmp_path / "fixture-mooncake"), "--mooncake-ref", "f" * 40,
                           "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    trees = json.loads((out / "sglang-flags.json").read_text())["trees"]
    assert [(t["ref"], t["allow_abbrev"]) for t in trees] == [("v0.0.1", True), ("a" * 40, False)]


def test_the_shipped_flag_list_holds_the_aliases_of_the_flags_the_plan_owns():
    # The generated list (not a fixture): the spellings issue 33 found reaching the servers are in it.
    data = json.loads((REPO / "src/pdrepro/knobdata/sglang-flags.json").read_text())
    assert data["trees"] and all(t["allow_abbrev"] for t in data["trees"])
    options = {o: f["dest"] for f in data["trees"][0]["flags"] for o in f["options"]}
    assert options["--tensor-parallel-size"] == options["--tp-size"] == "tp_size"
    assert options["--model"] == options["--model-path"] == "model_path"
    assert options["--disaggregation-mode"] == "disaggregation_mode"


def test_mooncake_list_and_its_rdma_judgement(tmp_path):
    data = _generate(tmp_path)["mooncake"]
    assert data["source"] == {"repo": "kvcache-ai/Mooncake", "ref": "f" * 40, "tree": "a source checkout"}
    assert data["listed_prefixes"] == ["MC_"]
    got = _by_name(data)
    assert sorted(got) == ["MC_FIXTURE_FILTER", "MC_FIXTURE_LOG", "MC_FIXTURE_OTHER", "MC_FIXTURE_QP",
                           "MC_FIXTURE_SGE", "MC_FIXTURE_TCP_POOL", "MC_FIXTURE_TIMEOUT"]
    qp = got["MC_FIXTURE_QP"]
    assert (qp["type"], qp["default"], qp["rdma_only"], qp["file"]) == \
        ("int", "2", True, "mooncake-common/src/environ.cpp")
    assert "rdma_transport/rdma_endpoint.cpp" in qp["evidence"]
    # Traced through `config.sge_limit = ...` in the block that reads it.
    assert got["MC_FIXTURE_SGE"]["rdma_only"] and got["MC_FIXTURE_SGE"]["only_in"] == ["rdma"]
    # A file outside the transports that speaks verbs counts as RDMA.
    assert got["MC_FIXTURE_FILTER"]["rdma_only"]
    assert not got["MC_FIXTURE_LOG"]["rdma_only"] and got["MC_FIXTURE_LOG"]["default"] == "INFO"
    assert not got["MC_FIXTURE_TCP_POOL"]["rdma_only"] and got["MC_FIXTURE_TCP_POOL"]["only_in"] == ["tcp"]
    # `port` is too bare a field to trace: judged by where it is read, which is no transport.
    assert not got["MC_FIXTURE_OTHER"]["rdma_only"] and got["MC_FIXTURE_OTHER"]["only_in"] == []


def test_a_tree_that_is_not_a_checkout_is_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, str(KNOBGEN), "--sglang-src", str(empty), "--sglang-ref", "v1",
                           "--mooncake-src", str(empty), "--mooncake-ref", "x", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "SGLANG_SRC" in done.stderr
    assert not list((tmp_path / "out").glob("*.json"))


def test_make_knobs_without_the_trees_says_what_to_give_and_writes_nothing():
    data = REPO / "src" / "pdrepro" / "knobdata"
    before = {f.name: f.read_bytes() for f in data.glob("*.json")}
    done = subprocess.run(["make", "-s", "knobs"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode != 0 and "SGLANG_SRC=" in done.stderr and "MOONCAKE_SRC=" in done.stderr
    assert {f.name: f.read_bytes() for f in data.glob("*.json")} == before
