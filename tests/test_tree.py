"""The test tree mirrors the package: each folder of tests/ holding tests is named after a package of
src/pdrepro, and no two test modules share a name (tests/conftest.py puts every folder on one import path)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "src" / "pdrepro"


# The adversarial suite attacks the whole bundle through its commands, so it mirrors no one package; the load
# sweep's modules sit in the layers their jobs belong to (sweep, analysis, verdicts, report), tested together.
ACROSS_PACKAGES = {"adversarial", "load"}


def test_each_test_folder_mirrors_a_package():
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")} - ACROSS_PACKAGES
    assert folders, "no test folder found"
    missing = sorted(f for f in folders if not (PACKAGE / f / "__init__.py").is_file())
    assert not missing, f"test folders naming no package of src/pdrepro: {missing}"


def test_test_module_names_are_unique():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)
    assert not [n for n, c in names.items() if c > 1]
