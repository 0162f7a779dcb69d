"""`pdrepro offline-model` writes into folders people name, so it never clobbers and never follows: a folder
holding a model or an existing dataset is refused unless --force; a link where a file goes is refused even
with --force and its target stays as it was; sizes are held to bounds and to the free disk before a byte is
written; SIGTERM mid-write exits 143 and leaves no temporary file and no part of a model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from clihelp import assert_one_line_error, pdrepro

import pdrepro.commands.offline_model as command

SMALL = ["--vocab-size", "1000", "--intermediate-size", "64", "--max-positions", "2048", "--conversations", "5"]


def _make(out, dataset, *extra):
    return pdrepro("offline-model", "--out", out, "--dataset", dataset, *SMALL, *extra)


def _tree(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("made")
    result = _make(root / "model", root / "data.json")
    assert result.rc == 0, result.err
    return root


def test_a_folder_holding_a_model_is_refused_without_force_and_left_as_it_was(made):
    before = {p: p.stat().st_mtime_ns for p in (made / "model").iterdir()}
    result = _make(made / "model", made / "other.json")
    assert_one_line_error(result, "offline-model", "already holds a model", "--force")
    assert {p: p.stat().st_mtime_ns for p in (made / "model").iterdir()} == before
    assert not (made / "other.json").exists()


def test_an_existing_dataset_is_refused_without_force(made, tmp_path):
    result = _make(tmp_path / "new-model", made / "data.json")
    assert_one_line_error(result, "offline-model", "already exists", "--force")
    assert not (tmp_path / "new-model").exists()


def test_force_replaces_the_commands_own_files_and_nothing_else(tmp_path):
    assert _make(tmp_path / "m", tmp_path / "d.json").rc == 0
    (tmp_path / "m" / "README.md").write_text("mine")
    old = (tmp_path / "m" / "model.safetensors").stat().st_ino
    result = _make(tmp_path / "m", tmp_path / "d.json", "--force", "--seed", "7")
    assert result.rc == 0, result.err
    assert (tmp_path / "m" / "model.safetensors").stat().st_ino != old
    assert (tmp_path / "m" / "README.md").read_text() == "mine"
    assert not [n for n in _tree(tmp_path) if n.split("/")[-1].startswith(".")]


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json"])
def test_a_link_planted_in_the_model_folder_is_refused_even_with_force(tmp_path, name):
    outside = tmp_path / "outside"
    outside.write_text("precious")
    out = tmp_path / "m"
    out.mkdir()
    (out / name).symlink_to(outside)
    result = _make(out, tmp_path / "d.json", "--force")
    assert_one_line_error(result, "offline-model", str(out / name), "symlink")
    assert outside.read_text() == "precious"
    assert _tree(out) == [name] and not (tmp_path / "d.json").exists()


def test_a_dataset_that_is_a_link_is_refused_even_with_force(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    (tmp_path / "d.json").symlink_to(outside)
    result = _make(tmp_path / "m", tmp_path / "d.json", "--force")
    assert_one_line_error(result, "offline-model", "d.json", "symlink")
    assert outside.read_text() == "precious" and not (tmp_path / "m").exists()


def test_force_does_not_put_weights_beside_another_models_shards(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / "model-00001-of-00002.safetensors").write_bytes(b"x")
    result = _make(out, tmp_path / "d.json", "--force")
    assert_one_line_error(result, "offline-model", "another model", "model-00001-of-00002.safetensors")
    assert _tree(out) == ["model-00001-of-00002.safetensors"]


@pytest.mark.parametrize("option, value, needle", [
    ("--vocab-size", "100000000", "--vocab-size"), ("--intermediate-size", "0", "--intermediate-size"),
    ("--max-positions", "-3", "--max-positions"), ("--conversations", "0", "--conversations"),
    ("--conversations", "99999999", "--conversations"), ("--seed", "-1", "--seed"),
])
def test_sizes_out_of_bounds_are_refused_before_anything_is_written(tmp_path, option, value, needle):
    result = pdrepro("offline-model", "--out", tmp_path / "m", "--dataset", tmp_path / "d.json", *SMALL, option, value)
    assert_one_line_error(result, "offline-model", needle)
    assert _tree(tmp_path) == []


def test_a_model_larger_than_the_free_disk_is_refused_before_writing(tmp_path, monkeypatch):
    # The free space is the one figure a test cannot set on a real file system without mounting one.
    monkeypatch.setattr(command, "free_bytes", lambda folder: 50 << 20)
    result = _make(tmp_path / "m", tmp_path / "d.json")
    assert_one_line_error(result, "offline-model", "GB free", "needs")
    assert _tree(tmp_path) == []


def test_an_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "m").write_text("a file")
    assert_one_line_error(_make(tmp_path / "m", tmp_path / "d.json"), "offline-model", "not a folder")


def test_sigterm_mid_write_exits_143_and_leaves_nothing_half_written(tmp_path):
    out = tmp_path / "m"
    argv = [sys.executable, "-m", "pdrepro", "offline-model", "--out", str(out), "--dataset", str(tmp_path / "d.json"),
            "--vocab-size", "1000", "--intermediate-size", "8192", "--max-positions", "2048", "--conversations", "5"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        staged = list(out.glob(".pdrepro-stage-*/model.safetensors")) if out.is_dir() else []
        if staged and staged[0].stat().st_size > (1 << 20):
            break
        time.sleep(0.01)
    else:
        proc.kill()
        pytest.fail(f"the weights were never being written: {proc.communicate()}")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert _tree(tmp_path) == ["m"], "a stage, a temporary file or part of the model was left"
    assert os.listdir(out) == []
