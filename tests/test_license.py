"""The LICENSE file is the license pyproject.toml declares, and the source distribution carries it."""

from pathlib import Path

from pyproject_data import load_pyproject

ROOT = Path(__file__).resolve().parents[1]


def test_license_file_is_the_declared_license():
    declared = load_pyproject()["project"]["license"]["text"]
    assert declared == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text


def test_sdist_ships_the_license():
    assert "LICENSE" in load_pyproject()["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
