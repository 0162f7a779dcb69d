"""A resume compares what each member asks for, not how its words were spelt (commands.memberwords): the recorded
words are read back by the stages' own parsers into typed requests, field by field. The same request in any order
or spelling is the same; any one field changed is named with both values; words no longer read are refused on one
line naming the member and the fix. The arms states recorded by real runs (an older bundle's spelling) read back
as the requests this bundle would record for them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from memberhelp import flag_groups, member

from pdrepro.commands.memberwords import WHERE_FILES, differ, requests
from pdrepro.core.errors import UserError
from pdrepro.rundir import armsstate
from pdrepro.rundir.armsstate import ArmRecord

RUN = Path("/runs/ab")
RECORDED = Path(__file__).resolve().parents[1] / "recorded"

# Each field a member's stack or sweep words may set, with values its parser takes (the first is the default, or a
# typical value where the field has no default).
STACK = {"scenario": ["onebox-qwen25-0.5b", "/runs/ab/scenarios/nixl.yaml"], "stack": ["disaggregated", "regular"],
         "gpus": [None, "0", "0,1"], "mem_fraction": [None, 0.3, 0.25], "transfer_backend": [None, "nixl", "mooncake"],
         "force_tcp": [False, True], "poll": [1.0, 0.1], "grace": [30.0, 5.0], "model": [None, "/m", "/other/m"]}
SWEEP = {"length_timeout": [None, 120.0, 60.5], "wait_timeout": [None, 30.0], "metrics": [False, True],
         "on_failure": ["continue", "stop"], "prompt_lens": [None, "128,1024"], "model_path": ["/m", "/other/m"]}
SERVER_ARGS = ["--attention-backend triton", "--enable-metrics", "--chunked-prefill-size 4096"]


def _record(stack: dict, sweep: dict, server_args: tuple[str, ...] = ()) -> ArmRecord:
    """The record this bundle writes for the member with these fields (its canonical words)."""
    arm = member(RUN, "nixl", [], ["--scenario", "s", "--model-path", "/m", "--dataset-path", "/d.json"])
    arm = dataclasses.replace(arm, stack=dataclasses.replace(arm.stack, server_arg=server_args, **stack),
                              sweep=dataclasses.replace(arm.sweep, **sweep))
    return arm.record()


@st.composite
def respelt(draw, words: tuple[str, ...], defaults: dict) -> tuple[str, ...]:
    """The same request in another order and spelling: flags shuffled (the server flags keep their own order, which
    is meaning), a float with a trailing zero, ``--flag=value`` and ``--flag value`` swapped, defaults given."""
    groups = flag_groups(words)
    given_flags = {g[0].partition("=")[0] for g in groups}
    groups += [[flag, str(value)] for name, value in defaults.items() if (flag := f"--{name.replace('_', '-')}")
               not in given_flags and value is not None and value is not False and draw(st.booleans())]
    groups = draw(st.permutations(groups))
    serves = iter([g for g in flag_groups(words) if g[0].startswith("--server-arg")])
    groups = [next(serves) if g[0].startswith("--server-arg") else g for g in groups]
    out: list[str] = []
    for group in groups:
        flag, _, joined = group[0].partition("=")
        value = group[1] if len(group) > 1 else joined or None
        if value is None:
            out.append(flag)
            continue
        try:
            value = f"{float(value):.2f}0" if draw(st.booleans()) and "." in value else value
        except ValueError:
            pass
        # A value opening with a dash reads as a value only joined, or when it holds a space (argparse's rule).
        apart = draw(st.booleans()) and (not value.startswith("-") or " " in value)
        out += [flag, value] if apart else [f"{flag}={value}"]
    return tuple(out)


@st.composite
def members(draw) -> tuple[dict, dict, tuple[str, ...]]:
    stack = {name: draw(st.sampled_from(values)) for name, values in STACK.items()}
    sweep = {name: draw(st.sampled_from(values)) for name, values in SWEEP.items()}
    return stack, sweep, tuple(draw(st.lists(st.sampled_from(SERVER_ARGS), max_size=3, unique=True)))


@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_the_same_request_in_any_order_and_spelling_is_the_same(data):
    stack, sweep, serve = data.draw(members())
    now = _record(stack, sweep, serve)
    was = now.model_copy(update={
        "stack": data.draw(respelt(now.stack, {k: v[0] for k, v in STACK.items() if k not in ("scenario", "model")})),
        "sweep": data.draw(respelt(now.sweep, {k: v[0] for k, v in SWEEP.items() if k != "model_path"}))})
    assert differ(RUN)(was, now) is None, (was, now)


@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_any_one_field_changed_is_named_with_both_values(data):
    stack, sweep, serve = data.draw(members())
    which = data.draw(st.sampled_from(["stack", "sweep", "server_arg"]))
    fields = {"stack": STACK, "sweep": SWEEP, "server_arg": {"server_arg": [serve, (*serve, "--enable-x"), ()]}}[which]
    name = data.draw(st.sampled_from(sorted(fields)))
    given_now = {"stack": stack, "sweep": sweep, "server_arg": {"server_arg": serve}}[which]
    other = data.draw(st.sampled_from([v for v in fields[name] if v != given_now[name]]))
    changed = ({**stack, name: other} if which == "stack" else stack, {**sweep, name: other} if which == "sweep"
               else sweep, other if which == "server_arg" else serve)
    was, now = _record(stack, sweep, serve), _record(*changed)
    why = differ(RUN)(was, now)
    part = "sweep" if which == "sweep" else "stack"
    assert why is not None and why.startswith(f"its {part}'s --{name.replace('_', '-')} was "), why
    assert "\n" not in why
    # Where the model lies is no change for a command that lets it move (the tune), any other field still is.
    assert (differ(RUN, movable=WHERE_FILES)(was, now) is None) == (name in WHERE_FILES)


def test_a_change_names_the_member_the_field_and_both_values_in_the_refusal():
    was = _record({"gpus": "0"}, {})
    now = _record({"gpus": "0,1"}, {})
    found = armsstate.ArmsState(label="ab x", arms=(was,))
    with pytest.raises(UserError) as exc:
        armsstate.check_same(found, found.model_copy(update={"arms": (now,)}), RUN / "arms-state.json", differ(RUN))
    assert str(exc.value).startswith(f"{RUN}/arms-state.json: arm nixl: its stack's --gpus was '0' and is now '0,1'; "
                                     "give another --out")


@pytest.mark.parametrize("words, why", [
    (["--bogus", "1"], "unrecognized arguments: --bogus 1"),
    (["--mem-fraction", "lots"], "argument --mem-fraction"),
    (["--out", "/elsewhere"], "sets --out"),
    (["--gpus"], "expected one argument"),
])
def test_words_that_no_longer_read_are_refused_naming_the_member_and_the_fix(words, why):
    now = _record({}, {})
    was = now.model_copy(update={"stack": tuple(words)})
    with pytest.raises(UserError) as exc:
        differ(RUN)(was, now)
    message = str(exc.value)
    assert message.startswith("arm nixl: its recorded stack words no longer read as this bundle's flags (")
    assert why in message and message.endswith("give another --out (that run was started by another bundle)")
    assert "\n" not in message


def test_a_run_folder_moved_keeps_its_paths_inside_it_but_not_outside():
    was = _record({"scenario": "/old/place/ab/scenarios/nixl.yaml"}, {"logs_from": "/old/place/ab/nixl/logs"})
    now = _record({"scenario": f"{RUN}/scenarios/nixl.yaml"}, {"logs_from": f"{RUN}/nixl/logs"})
    assert differ(RUN)(was, now) is None
    elsewhere = _record({"scenario": "/old/place/ab/scenarios/mooncake.yaml"}, {"logs_from": "/old/place/ab/nixl/logs"})
    assert differ(RUN)(elsewhere, now) == (f"its stack's --scenario was '/old/place/ab/scenarios/mooncake.yaml' and is "
                                           f"now '{RUN}/scenarios/nixl.yaml'")


@pytest.mark.parametrize("state", sorted(RECORDED.rglob("arms-state.json")), ids=lambda p: str(p.relative_to(RECORDED)))
def test_a_recorded_runs_words_read_back_as_the_requests_this_bundle_records(state):
    found = armsstate.ArmsState.model_validate_json(state.read_text())
    # The real runs ran in /tmp/runs/<folder>: the run's folder name is the last part before the member's.
    run = Path(next(w for a in found.arms for w in a.sweep if w.endswith("/logs"))).parents[1]
    for arm in found.arms:
        stack, sweep = requests(run, arm)
        ours = ArmRecord(name=arm.name, backend=arm.backend, configuration=arm.configuration, stack=stack.words(),
                         sweep=sweep.words())
        assert differ(run)(arm, ours) is None
        # Moved (a copy of the run at another path), the same record still resumes.
        assert differ(Path("/copied/elsewhere"))(arm, ours) is None
    # An older spelling: the recorded stack words are not this bundle's, though they mean the same.
    assert any(a.stack != requests(run, a)[0].words() for a in found.arms)
