"""The rendered launch carries any word exactly (issue 24: one launch plan, not two): whatever a scenario puts
in its extra server args and its backend's variables (spaces, quotes, `$`, backslashes, newlines, non-ASCII,
YAML and compose syntax), `pdrepro render --target compose` exits 0 or 2 (one line, no traceback), writes
nothing outside --out, and on 0 every compose file reads back (YAML, with compose's `$$`) to the plan's argv
and environment, word for word.

The Kubernetes manifests are held the same way: with those words, a model folder whose name holds any of
them, and a scenario file that starts indented or blank and ends in blank lines, `render --target k8s` exits
0 or 2, and on 0 every manifest reads back (YAML, then the kubelet's `$(NAME)`/`$$` expansion) to the plan's
argv and environment (less what the cluster decides), the model path and the scenario file's text, byte for
byte. Its strategies would have found what the k8s writers guard: a word written plain that a YAML reader
takes for a number or a boolean (`1e5`, `y`), a block whose first line starts with a space, blank lines lost
at a template's end, and a `$$` or `$(POD_NAME)` in an argument that the kubelet rewrote (the dict version
passed both on as they were, so the server got `$` or the pod's name).

The strategies would have found what the templates fixed: the old compose files spliced the extra args into
the command through an env variable, so a word with a space split in two and a `$`, a quote or a backslash
was refused or reached the server changed; an env value was written into an env file with the same limits."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import yaml
from depth import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdrepro.cli import main
from pdrepro.commands import build_parser
from pdrepro.commands.render import build_site
from pdrepro.launch import plan as launch
from pdrepro.launch.targets import k8s
from pdrepro.launch.targets.registry import TARGETS
from pdrepro.launch.targets.templating import yaml_scalar, yaml_text
from pdrepro.scenario.model import load_scenario

SHIPPED = "h20-qwen3-235b-1p1d"
IPS = ("192.0.2.10", "192.0.2.20")
# Text a shell, YAML or compose reads specially, with anything else hypothesis finds.
AWKWARD = st.lists(st.sampled_from([*" $'\"\\\n\t{}[]:#&*!|>%@`,-=()", "${X}", "$$", "$(", "$(POD_NAME)", "é", "\u2028"]),
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


@settings(max_examples=examples(25), deadline=None)
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


# A folder name: anything but `/` and NUL (and not `.` or `..`), with YAML's awkward words among them.
FOLDER = st.one_of(AWKWARD, st.text(min_size=1, max_size=12), st.sampled_from(["1e5", "y", "null", "- x", "a: b"])).filter(
    lambda n: "/" not in n and "\0" not in n and n not in ("", ".", ".."))


# Words some YAML reader takes for no string when written plain: Kubernetes reads YAML 1.1 the Go way.
RETYPED = st.sampled_from(["1e5", "y", "N", "0o17", "inf", "0x1p-2", "Yes", "~", "1_000", "12:30", "-.5", "off"])
K8S_WORD = st.one_of(WORD, RETYPED)


def _retyped(word: str) -> bool:
    """Whether WORD, written plain, is read as a number, a boolean or null by some YAML reader (an oracle of its
    own, not the writer's rule)."""
    if word.lower() in {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", ""}:
        return True
    bare = word.replace("_", "")
    parsers = [float, lambda w: int(w, 0)] + ([float.fromhex] if re.match(r"[-+]?0[xX]", bare) else [])
    for parse in parsers:
        try:
            parse(bare)
            return True
        except ValueError:
            pass
    return bool(re.fullmatch(r"[-+]?[0-9]+(:[0-5]?[0-9])+(\.[0-9]*)?", bare))


def _plain_items(text: str) -> list[str]:
    """The scalar sequence items of a manifest written plain (no quote, no block)."""
    items = [m.group(1) for m in re.finditer(r"^ *- (.*)$", text, re.MULTILINE)]
    return [i for i in items if i[:1] not in ("'", '"', "|") and ": " not in i and not i.endswith(":")]


def _kubelet(word: str, defined: set[str]) -> str:
    """WORD as the kubelet hands it to the process (its variable expansion, written from its documented rules:
    `$$` is `$`, `$(NAME)` of a defined variable its value, anything else as it is)."""
    out, i = [], 0
    while i < len(word):
        if word[i] == "$" and i + 1 < len(word):
            nxt = word[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(" and (close := word.find(")", i + 2)) != -1:
                name = word[i + 2:close]
                out.append(f"<value of {name}>" if name in defined else word[i:close + 1])
                i = close + 1
                continue
            out.append(word[i:i + 2])
            i += 2
            continue
        out.append(word[i])
        i += 1
    return "".join(out)


def _render_k8s(tmp: Path, extra: list[str], env_value: str, folder: str, head: str, tail: str, comment: str):
    data = load_scenario(SHIPPED).to_dict()
    data["launch"]["extra_server_args"] = ["--served-model-name", *extra] if extra else []
    data["launch"]["env"]["MC_TE_METRIC"] = env_value
    scenario = tmp / "s.yaml"
    scenario.write_text(head + yaml.safe_dump(data, sort_keys=False) + "# " + comment + tail)
    model = tmp / "models" / folder
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    out = tmp / "out"
    argv = ["render", "--target", "k8s", "--scenario", str(scenario), "--model", str(model), "--out", str(out)]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue().strip().splitlines(), argv, scenario


def _objects(out: Path) -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for f in sorted(out.glob("*.yaml"))
            for o in yaml.safe_load_all(f.read_text())}


@settings(max_examples=examples(12), deadline=None)
@given(extra=st.lists(K8S_WORD, max_size=3), env_value=K8S_WORD, folder=FOLDER,
       head=st.sampled_from(["", "\n", "  # indented\n"]), tail=st.sampled_from(["", "\n", "\n\n\n"]), comment=WORD)
@example(extra=["1e5", "y", "0o17", "a$HOME'b\"c\\d", "x\ny", "$$(POD_NAME)"], env_value="$(POD_NAME)$",
         folder="qwen 1e5 'x'\n\"y\"", head="  # indented\n", tail="\n\n", comment="é 'q': - [x] \\ $")
def test_any_word_reaches_the_k8s_manifests_unchanged(tmp_path_factory, extra, env_value, folder, head, tail, comment):
    tmp = tmp_path_factory.mktemp("k")
    rc, err, argv, scenario = _render_k8s(tmp, extra, env_value, folder, head, tail, comment)
    assert rc in (0, 2)
    assert sorted(p.name for p in tmp.iterdir()) == (["models", "out", "s.yaml"] if rc == 0 else ["models", "s.yaml"])
    if rc == 2:
        assert len(err) == 1 and "Traceback" not in err[0], err
        return
    args = build_parser().parse_args(argv)
    loaded = load_scenario(str(scenario))
    plan = launch.Plan(loaded, build_site(args, loaded, *TARGETS["k8s"].hosts(loaded, args)))
    lp = plan.launch_plan()
    objects = _objects(tmp / "out")
    # The servers' and the router's manifests (the sweep's holds the scenario file, whose own lists are its own).
    retyped = [w for f in ("20-prefill.yaml", "30-decode.yaml", "40-router.yaml")
               for w in _plain_items((tmp / "out" / f).read_text()) if _retyped(w)]
    assert not retyped, f"plain words a YAML reader takes for no string: {retyped}"
    decided = k8s.cluster_env(plan.engine)
    for server in lp.servers:
        sts = objects[("StatefulSet", k8s.statefulset_name(server.role))]["spec"]["template"]["spec"]
        (container,) = sts["containers"]
        defined = {e["name"] for e in container["env"]}
        assert [_kubelet(w, defined) for w in container["args"]] == list(server.argv)
        env = {e["name"]: _kubelet(e["value"], defined) for e in container["env"]
               if "value" in e and e["name"] != "PYTHONUNBUFFERED"}
        assert env == {k: v for k, v in server.env.items() if k not in decided}
        paths = {v["name"]: v["hostPath"]["path"] for v in sts["volumes"] if "hostPath" in v}
        assert paths["model"] == plan.site.model_path and folder in paths["model"]
    router = objects[("Deployment", "pdrepro-router")]["spec"]["template"]["spec"]["containers"][0]
    assert [_kubelet(w, set()) for w in router["command"]] == list(lp.router_argv)
    shipped = objects[("ConfigMap", "pdrepro-scenario")]["data"]["scenario.yaml"]
    assert shipped == scenario.read_text()
    job = objects[("Job", "pdrepro-sweep")]["spec"]["template"]["spec"]["containers"][0]
    assert job["command"][:2] == ["bash", "-c"]
    assert _kubelet(job["command"][2], set()) == k8s.job_script(lp, _cluster(plan, scenario))


def _cluster(plan: launch.Plan, scenario: Path) -> k8s.Cluster:
    site = plan.site
    assert site.ib_devices_file is not None
    return k8s.Cluster(namespace="pdrepro", image=site.image, model_path=site.model_path, dataset_path=site.dataset_path,
                       ib_devices_file=site.ib_devices_file, rdma_resource="rdma/hca", shared_claim="pdrepro-shared",
                       scenario_yaml=scenario.read_text(), configuration=None)


@settings(max_examples=examples(200), deadline=None)
@given(value=st.one_of(st.text(), K8S_WORD, st.lists(st.one_of(K8S_WORD, st.just("")), max_size=5).map("\n".join)))
def test_the_yaml_writers_give_back_any_text(value):
    # Where the manifests put values: a mapping's value, a sequence item, a literal block under either.
    text = (f"a:\n  k: {yaml_scalar(value)}\n  s:\n  - {yaml_scalar(value)}\n  b: {yaml_text(value, 4)}\n"
            f"  l:\n  - {yaml_text(value, 4)}\n---\nz: 1\n")
    first, second = yaml.safe_load_all(text)
    assert first == {"a": {"k": value, "s": [value], "b": value, "l": [value]}} and second == {"z": 1}
