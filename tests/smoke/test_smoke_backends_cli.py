"""`pdrepro smoke --backends`: a comma list of the engines the smoke knows; anything else is one line, exit 2,
before anything starts."""

import pytest
from clihelp import assert_one_line_error, pdrepro

from pdrepro.smoke.settings import parse_backends


@pytest.mark.parametrize(("text", "want"), [("mooncake", ("mooncake",)), ("mooncake,nixl", ("mooncake", "nixl")),
                                            (" nixl , mooncake ", ("nixl", "mooncake"))])
def test_known_backends_are_taken_in_order(text, want):
    assert parse_backends(text) == want


@pytest.mark.parametrize(("text", "needle"), [("mooncake,rdma", "unknown backend 'rdma'"), ("", "comma list"),
                                              ("mooncake,,nixl", "comma list"), ("nixl", "mooncake must be one"),
                                              ("mooncake,mooncake", "twice")])
def test_a_bad_backends_list_is_one_line_and_exit_2(tmp_path, text, needle):
    result = pdrepro("smoke", "--backends", text, "--results", tmp_path / "results", "--image", "no-such-image:0")
    assert_one_line_error(result, "smoke", needle)
    assert not (tmp_path / "results").exists()
