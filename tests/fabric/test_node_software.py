"""What a node's record says its servers run: a Python's packages (asked of a real interpreter in a child
process), an image on an engine that is not there, and the CUDA flavour read from the names that carry it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pdrepro.fabric import software


@pytest.mark.parametrize(("text", "flavour"), [
    ("mooncake-transfer-engine-cuda13", "cu13"), ("2.11.0+cu130", "cu13"), ("2.6.0+cu126", "cu12"),
    ("nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04", "cu13"), ("nixl-cu12", "cu12"),
    ("mooncake-transfer-engine-non-cuda", None), ("0.3.12.post1", None), ("", None), (None, None), ("cu14", None),
])
def test_the_flavour_is_read_only_where_a_name_says_it(text, flavour):
    assert software.flavour_of(text) == flavour


def _python(tmp_path: Path, packages: dict) -> str:
    """A Python whose site-packages hold these distributions' metadata (real dist-info folders)."""
    site = tmp_path / "site"
    for name, version in packages.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} -S \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def test_a_pythons_packages_give_versions_and_flavour(tmp_path):
    python = _python(tmp_path, {"sglang": "0.5.15.post1", "mooncake-transfer-engine-cuda13": "0.3.12.post1",
                                "torch": "2.11.0"})
    found = software.from_python(python)
    assert (found.launcher, found.sglang_version, found.mooncake_version) == ("host", "0.5.15.post1", "0.3.12.post1")
    assert found.mooncake_distribution == "mooncake-transfer-engine-cuda13" and found.wheel_flavour == "cu13"
    assert json.loads(found.model_dump_json())["read_from"] == f"python {python}"


def test_a_python_that_is_missing_or_answers_nonsense_leaves_every_version_unknown(tmp_path):
    for python in (str(tmp_path / "nope"), "/bin/false"):
        found = software.from_python(python)
        assert found.launcher == "host"
        assert (found.sglang_version, found.mooncake_version, found.wheel_flavour) == (None, None, None)


def test_an_image_on_no_engine_is_named_and_nothing_else_guessed(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    found = software.from_image("pdrepro-gpu:0.1.0")
    assert (found.launcher, found.image) == ("compose", "pdrepro-gpu:0.1.0")
    assert (found.image_digest, found.sglang_version, found.mooncake_version, found.wheel_flavour) == (None,) * 4
