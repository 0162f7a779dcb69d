"""The rendered launch carries any word exactly (issue 24: one launch plan, not two): whatever a scenario puts
in its extra server args and its backend's variables (spaces, quotes, `$`, backslashes, newlines, non-ASCII,
YAML and compose syntax), `pdrepro render --target compose` exits 0 or 2 (one line, no traceback), writes
nothing outside --out, and on 0 every compose file reads back (YAML, with compose's `$$`) to the plan's argv
and environment, word for word.

The strategies would have found what the templates fixed: the old compose files spliced the extra args into
the command through an env variable, so a word with a space split in two and a `$`, a quote or a backslash
was refused or reached the server changed; an env value was written into an env file with the same limits."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdrepro.cli import main
from pdrepro.launch import plan as launch
from pdrepro.scenario.model import load_scenario

SHIPPED = "h20-qwen3-235b-1p1d"
IPS = ("192.0.2.10", "192.0.2.20")
# Text a shell, YAML or compose reads specially, with anything else hypothesis finds.
AWKWARD = st.lists(st.sampled_from([*" $'\"\\\n\t{}[]:#&*!|>%@`,-=", "${X}", "$$", "é", "\u2028"]),
                   max_size=8).map("".join)
WORD = st.one_of(AWKWARD, st.text(max_size=12))


def _render(tmp: Path, extra: list[str], env_value: str) -> tuple[int, list[str], Path]:
    data = load_scenario(SHIPPED).to_dict()
    data["launch"]["extra_server_args"] = ["--served-model-name", *extra] if extra else []
    data["launch"]["env"]["MC_TE_METRIC"] = env_value
    scenario = tmp / "s.yaml"
    scenario.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp / "out"
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(["render", "--scenario", str(scenario), "--prefill-ip", IPS[0], "--decode-ip", IPS[1], "--out", str(out)])
    return rc, err.getvalue().strip().splitlines(), scenario


def _runs(words):
    return [w.replace("$$", "$") for w in words]


@settings(max_examples=25, deadline=None)
@given(extra=st.lists(WORD, max_size=3), env_value=WORD)
@example(extra=["qwen 235b", "a$HOME'b\"c\\d", "x\ny"], env_value="${MEMLOCK}")
def test_any_word_reaches_the_server_unchanged(tmp_path_factory, extra, env_value):
    tmp = tmp_path_factory.mktemp("r")
    rc, err, scenario = _render(tmp, extra, env_value)
    assert rc in (0, 2)
    assert sorted(p.name for p in tmp.iterdir()) == (["out", "s.yaml"] if rc == 0 else ["s.yaml"])
    if rc == 2:
        assert len(err) == 1 and "Traceback" not in err[0], err
        return
    site = launch.Site(prefill_hosts=(IPS[0],), decode_hosts=(IPS[1],), model_path="/models/Qwen3-235B-A22B-Instruct-2507",
                       dataset_path=launch.DEFAULT_DATASET, ib_devices_file=launch.DEFAULT_IB_DEVICES,
                       gpus=tuple(range(8)), image="unused")
    plan = launch.Plan(load_scenario(str(scenario)), site).launch_plan()
    for server in plan.servers:
        svc = yaml.safe_load((tmp / "out" / f"{server.role}.yaml").read_text())["services"][server.role]
        assert _runs(svc["command"]) == list(server.argv)
        env = {k: v.replace("$$", "$") for k, v in svc["environment"].items() if k != "PYTHONUNBUFFERED"}
        assert env == server.env
        # Compose interpolates a lone `$`: every one the plan's words hold is doubled in the file.
        assert all("$" not in w.replace("$$", "") for w in [*svc["command"], *svc["environment"].values()])
