"""The HTTP paths the rendered probes ask come from the engine, not from the templates: a template that wrote
one literally would keep asking it of an engine whose router or workers answer elsewhere."""

from __future__ import annotations

import dataclasses
import re
from importlib.resources import files

import yaml

from pdrepro.cli import main
from pdrepro.engines import engine
from pdrepro.launch.targets import k8s

TEMPLATES = files("pdrepro.launch.targets").joinpath("templates")
PROBE_PATH = re.compile(r"^\s*path:\s*(\S+)\s*$", re.M)


def test_no_template_writes_a_probe_path_itself():
    found = {t.name: PROBE_PATH.findall(t.read_text()) for t in TEMPLATES.iterdir() if t.name.endswith(".tmpl")}
    assert any(found.values()), "no probe path found: the pattern no longer matches the templates"
    literal = {name: paths for name, paths in found.items() if any(not p.startswith("@") for p in paths)}
    assert not literal, f"probe paths written in the template, not taken from the engine: {literal}"


def test_the_router_probes_ask_the_engines_paths(tmp_path, monkeypatch, capsys):
    # An engine whose router answers elsewhere: the rendered Deployment must follow it.
    other = dataclasses.replace(engine("sglang"), router_liveness_path="/alive-elsewhere",
                                router_health_paths=("/ready-elsewhere",))
    monkeypatch.setattr(k8s, "engine", lambda name: other)
    out = tmp_path / "out"
    assert main(["render", "--target", "k8s", "--scenario", "h20-qwen3-235b-2p2d", "--out", str(out)]) == 0
    capsys.readouterr()
    router = next(d for d in yaml.safe_load_all((out / "40-router.yaml").read_text()) if d["kind"] == "Deployment")
    container = router["spec"]["template"]["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/alive-elsewhere"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready-elsewhere"
