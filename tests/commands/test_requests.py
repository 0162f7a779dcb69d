"""The sweep stage's typed request (sweep.request, built by commands.requests): one type for the command line
and the runners. Every option the sweep takes is a field of the request (a new option cannot be dropped on the
way from a runner), and a member's options with the endpoints its stack recorded make the request the same
command line would."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from pdrepro.commands import build_parser
from pdrepro.commands.requests import member_request
from pdrepro.sweep.request import SweepRequest

WORDS = ("--scenario", "onebox-qwen25-0.5b", "--model-path", "/m", "--dataset-path", "/d.json", "--bench-in-place",
         "--logs-from", "/run/arm/logs", "--length-timeout", "120", "--prompt-lens", "128,1024")


def _sweep_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["sweep"]


def test_every_sweep_option_is_a_field_of_the_request():
    dests = {a.dest for a in _sweep_parser()._actions if a.dest != "help"}
    fields = {f.name for f in dataclasses.fields(SweepRequest)} - {"func"}
    assert dests == fields


def test_a_members_request_is_the_one_its_command_line_makes():
    urls = ["--router", "http://127.0.0.1:8000", "--prefill", "http://127.0.0.1:30000", "--decode",
            "http://127.0.0.1:30001"]
    parsed = build_parser().parse_args(["sweep", *WORDS, *urls, "--out", "/run/arm"])
    from_cli = SweepRequest.from_args(parsed)
    from_runner = member_request(WORDS, out=Path("/run/arm"), router="http://127.0.0.1:8000",
                                 prefill="http://127.0.0.1:30000", decode="http://127.0.0.1:30001")
    assert from_cli == from_runner
    assert from_runner.length_timeout == 120.0 and from_runner.prompt_lens == "128,1024"
    assert from_runner.worker == () and from_runner.configuration is None
    # A comparison's configuration and its regular servers are typed fields too, not words appended.
    regular = member_request(WORDS, out=Path("/run"), router="http://r", workers=("http://a", "http://b"),
                             configuration="2-regular")
    assert regular.worker == ("http://a", "http://b") and regular.configuration == "2-regular"
    with pytest.raises(dataclasses.FrozenInstanceError):
        regular.out = Path("/elsewhere")  # type: ignore[misc]
