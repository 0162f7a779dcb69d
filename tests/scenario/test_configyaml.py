"""Scenario and thresholds files mean what they say: a key given twice, an alias bomb and the YAML 1.1
readings nobody writes on purpose (042 as octal, 1:30 as 90, yes as true) are refused with the key or field
named, on one short line, at the one place every config file is parsed (pdrepro.scenario.configyaml)."""

import time
from importlib import resources

import pytest

from pdrepro.core.errors import UserError
from pdrepro.scenario.configyaml import parse
from pdrepro.scenario.model import load_scenario, resolve_scenario

SHIPPED = (resources.files("pdrepro") / "scenarios" / "h20-qwen3-235b-1p1d.yaml").read_text()


def _refused(call, *needles) -> str:
    with pytest.raises(UserError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_key_given_twice_in_a_scenario_names_the_key_and_both_lines(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SHIPPED.replace("  seed: 42\n", "  seed: 42\n  seed: 7\n"))
    line = SHIPPED.splitlines().index("  seed: 42") + 1
    _refused(lambda: load_scenario(path), str(path), "'seed'", f"line {line}", f"line {line + 1}")


def test_a_second_thresholds_block_is_an_error_not_a_removal_of_every_bound(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("thresholds:\n  max_ttft_ms: {128: 200.0}\nthresholds:\n  max_transfer_share_pct: 3.0\n")
    _refused(lambda: resolve_scenario("h20-qwen3-235b-1p1d", None, str(path)), str(path), "'thresholds'",
             "line 1", "line 3")


def test_a_key_twice_in_a_flow_mapping_is_refused(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("max_ttft_ms: {128: 200.0, 256: 300.0, 128: 900.0}\n")
    _refused(lambda: resolve_scenario("h20-qwen3-235b-1p1d", None, str(path)), "128")


def test_a_merge_key_may_still_be_overridden():
    # `<<:` is YAML's own way of saying "these, then mine": not a duplicate.
    data = parse("base: &b {a: 1, b: 2}\nmine:\n  <<: *b\n  b: 3\n", "f.yaml")
    assert data["mine"] == {"a": 1, "b": 3}


def test_an_alias_bomb_is_refused_quickly_on_one_short_line(tmp_path):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    path = tmp_path / "s.yaml"
    path.write_text(SHIPPED + "\n".join(lines).replace("a0:", "x_a0:", 1) + "\n")
    start = time.monotonic()
    _refused(lambda: load_scenario(path), str(path), "alias")
    assert time.monotonic() - start < 5


def test_a_few_aliases_are_fine():
    assert parse("a: &x [1, 2]\nb: *x\n", "f.yaml") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("written, field", [
    ("seed: 042", "sweep.seed"),          # YAML 1.1: octal 34
    ("seed: 0o17", "sweep.seed"),
    ("seed: 1:30", "sweep.seed"),         # YAML 1.1: sexagesimal 90
    ("seed: 1_000", "sweep.seed"),        # YAML 1.1: 1000
    ("seed: 0b101", "sweep.seed"),        # YAML 1.1: 5
])
def test_yaml_11_integers_are_refused_with_the_field_named(tmp_path, written, field):
    path = tmp_path / "s.yaml"
    path.write_text(SHIPPED.replace("  seed: 42", "  " + written))
    _refused(lambda: load_scenario(path), str(path), field, written.split(": ")[1])


def test_yes_is_not_true(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SHIPPED.replace("  disable_radix_cache: true", "  disable_radix_cache: yes"))
    _refused(lambda: load_scenario(path), "launch.disable_radix_cache", "'yes'")


def test_scientific_notation_without_a_dot_is_the_number_written(tmp_path):
    # YAML 1.1 (PyYAML) reads 4e2 as the string "4e2"; it is read as written: 400.
    path = tmp_path / "t.yaml"
    path.write_text("max_ttft_ms: {128: 4e2}\nmax_transfer_share_pct: 5e0\n")
    s = resolve_scenario("h20-qwen3-235b-1p1d", None, str(path))
    assert s.thresholds.max_ttft_ms[128] == 400.0 and s.thresholds.max_transfer_share_pct == 5.0


def test_a_leading_zero_in_a_text_field_is_kept_as_written():
    assert parse("v: 042\nt: 1:30\nw: on\n", "f.yaml") == {"v": "042", "t": "1:30", "w": "on"}


def test_the_published_numbers_still_read_as_before():
    data = parse("a: 1.0\nb: -3\nc: .inf\nd: inf\ne: ~\nf: 0\ng: true\nh: 1e-3\ni: 0x1F\n", "f.yaml")
    assert data == {"a": 1.0, "b": -3, "c": float("inf"), "d": "inf", "e": None, "f": 0, "g": True, "h": 0.001,
                    "i": "0x1F"}


def test_a_huge_wrong_value_makes_a_short_message(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SHIPPED.replace("  seed: 42", "  seed: " + "x" * 500_000))
    _refused(lambda: load_scenario(path), "sweep.seed", "expected an integer")
    path.write_text(SHIPPED.replace("  seed: 42", "  seed: [" + ", ".join(["[1, 2, 3]"] * 1000) + "]"))
    _refused(lambda: load_scenario(path), "sweep.seed")
