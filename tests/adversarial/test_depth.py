"""The deep profile deepens every property test: each test's seeded count goes through depth.examples, which
the deep profile (`make adversarial-deep`) multiplies by ten at least; a test that left the profile's count
alone gets the profiles' own defaults, ten times apart too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import depth
import pytest
from hypothesis import settings

TESTS = Path(__file__).resolve().parents[1]


def _max_examples_values() -> list[tuple[str, int, ast.expr]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if "fixtures" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "max_examples":
                found.append((str(path.relative_to(TESTS)), node.value.lineno, node.value))
    return found


def test_the_walk_finds_the_suites_counts():
    # A walk that found nothing would hold nothing: the suite sets its counts in many places.
    assert len([f for f in _max_examples_values() if f[0].startswith("adversarial/")]) >= 25


def test_no_test_sets_a_count_the_deep_profile_cannot_deepen():
    bare = [f"{where}:{line}: {ast.unparse(value)}" for where, line, value in _max_examples_values()
            if where != "conftest.py"
            and not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "examples")]
    assert not bare, f"set max_examples=examples(N) (from depth), so the deep profile runs ten times N: {bare}"


@pytest.mark.parametrize("seeded", [1, 3, 40, 200])
def test_examples_is_the_seeded_count_normally_and_ten_times_it_deep(monkeypatch, seeded):
    monkeypatch.delenv("PDREPRO_HYPOTHESIS", raising=False)
    assert depth.examples(seeded) == seeded
    monkeypatch.setenv("PDREPRO_HYPOTHESIS", "seeded")
    assert depth.examples(seeded) == seeded
    monkeypatch.setenv("PDREPRO_HYPOTHESIS", "deep")
    assert depth.examples(seeded) == 10 * seeded
    assert depth.examples(seeded, deep_count=5 * seeded) == 10 * seeded  # a deeper count only ever adds
    assert depth.examples(seeded, deep_count=100 * seeded) == 100 * seeded


def test_the_profiles_defaults_are_ten_times_apart():
    # Tests without their own count run the profile's: the deep one must deepen them as much.
    assert settings.get_profile("deep").max_examples >= 10 * settings.get_profile("seeded").max_examples


def test_a_deep_run_really_runs_ten_times_the_seeded_examples(tmp_path):
    # Counted as hypothesis runs them, in a child pytest under each profile.
    test = tmp_path / "test_counted.py"
    test.write_text(
        "from depth import examples\nfrom hypothesis import given, settings, strategies as st\nSEEN = []\n"
        "@settings(max_examples=examples(7))\n@given(st.integers())\ndef test_n(i):\n    SEEN.append(i)\n"
        "def test_z_count():\n    print('COUNT', len(SEEN))\n")
    counts = {}
    for profile in ("seeded", "deep"):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "--rootdir", str(tmp_path), "-c", "/dev/null", str(test)],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**_env(), "PDREPRO_HYPOTHESIS": profile})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        counts[profile] = int(proc.stdout.split("COUNT ")[1].split()[0])
    assert counts["seeded"] <= 7 and counts["deep"] > 7 * 9, counts


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(TESTS)}
