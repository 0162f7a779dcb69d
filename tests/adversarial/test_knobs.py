"""Hostile launch.env keys and values against the knob lists: the generated names, their typos (one letter
dropped, doubled, swapped or changed: the mistake a list exists to catch), arbitrary names under every prefix,
names no environment can carry (`=`, newlines, non-ASCII, a leading digit, empty), and arbitrary values (NUL,
newlines, quotes, numbers, YAML's other types).

The promise: `pdrepro render` exits 0 or 2 only, one line and no traceback on 2, nothing written on 2; when
it renders, every key is a valid name that some server reads (a listed knob, or a name under a prefix without
a list, a backend's required one or the shared one), and no listed prefix lets through a name its list lacks.
Before the lists, a typo under SGLANG_DISAGGREGATION_* or MC_* rendered silently and changed nothing; a name
with a newline or `=` rendered into the env files."""

from __future__ import annotations

import contextlib
import io
import tempfile
from importlib import resources
from pathlib import Path

import yaml
from depth import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pdrepro import backends, engines
from pdrepro.cli import main
from pdrepro.scenario import knobs, launch_env

KNOWN = sorted(k.name for k in knobs.knobs())
PREFIXES = sorted({p for n in backends.names() for p in backends.backend(n).env_prefixes}
                  | {p for n in engines.names() for p in engines.engine(n).env_prefixes}
                  | {p for kl in knobs.lists() for p in kl.listed_prefixes} | {"NCCL_", "X_"})
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"


@st.composite
def typo(draw) -> str:
    """A known name with one slip of the hand."""
    name = draw(st.sampled_from(KNOWN))
    at = draw(st.integers(0, len(name) - 1))
    how = draw(st.sampled_from(["drop", "double", "swap", "change"]))
    if how == "drop":
        return name[:at] + name[at + 1:]
    if how == "double":
        return name[:at] + name[at] + name[at:]
    if how == "swap" and at + 1 < len(name):
        return name[:at] + name[at + 1] + name[at] + name[at + 2:]
    return name[:at] + draw(st.sampled_from(UPPER)) + name[at + 1:]


KEYS = st.one_of(
    st.sampled_from(KNOWN),
    typo(),
    st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES), st.text(UPPER, min_size=0, max_size=10)),
    st.builds(lambda p, s: p + s, st.sampled_from(PREFIXES), st.text(min_size=1, max_size=4)),
    st.sampled_from(["", "1MC_X", "MC_SLICE_SIZE=1", "SGLANG_A\nB", "mc_slice_size", "SGLANG_Xé", "UCX_ TLS"]),
    st.integers(0, 9),  # YAML keys need not be text
)
VALUES = st.one_of(st.sampled_from(["1", "16", "-1", "", "rdma", "a\x00b", "x\ny", "'\"\\", "$(id)"]),
                   st.text(max_size=6), st.integers(-5, 5), st.none(), st.lists(st.integers(), max_size=2))


def _accepted(key, backend: str) -> bool:
    """Whether a rendered scenario may hold ``key`` under ``backend``: a valid name some server reads."""
    if not isinstance(key, str) or not launch_env.NAME.fullmatch(key):
        return False
    listed = knobs.covering(key)
    if listed is not None:
        return knobs.lookup(key) is not None
    be, en = backends.backend(backend), engines.engine("sglang")
    return key in launch_env.SHARED_TUNABLES or key in be.required_env or key.startswith((*be.env_prefixes,
                                                                                              *en.env_prefixes))


def _render(env: dict, backend: str) -> tuple[object, str, bool]:
    """`pdrepro render` of the one-box scenario with ``env`` over its launch.env: exit code, stderr, whether
    it wrote its output folder."""
    data = yaml.safe_load((resources.files("pdrepro") / "scenarios" / "onebox-qwen25-0.5b.yaml").read_text())
    data["launch"]["transfer_backend"] = backend
    data["launch"]["env"] = {**(data["launch"]["env"] if backend != "nixl" else {}), **env}
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "s.yaml", Path(tmp) / "out"
        path.write_text(yaml.safe_dump(data, sort_keys=False))  # keys of mixed types do not sort
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(["render", "--target", "onebox", "--scenario", str(path), "--gpus", "0,1",
                             "--out", str(out)])
            except SystemExit as exc:
                code = exc.code
        text = err.getvalue()
        assert code in (0, 2), (code, text)
        assert "Traceback" not in text
        if code == 2:
            assert len([line for line in text.splitlines() if line.strip()]) == 1, text
            assert not out.exists()
        return code, text, out.exists()


@settings(max_examples=examples(25, deep_count=300), deadline=None)
@given(env=st.dictionaries(KEYS, VALUES, max_size=4), backend=st.sampled_from(backends.names()))
# Found by the deep profile: a key with a line break whose value is no string made a two-line message (the
# model's type error named the key as it was, before the name check could refuse it).
@example(env={"SGLANG_A\nB": None}, backend="mooncake")
def test_launch_env_is_accepted_or_refused_on_one_line(env, backend):
    code, _, _ = _render(env, backend)
    if code == 0:
        for key, value in env.items():
            assert _accepted(key, backend), (key, backend)
            assert "\0" not in str(value)


# A name under a prefix every backend passes, with one character no environment name may hold.
BAD_NAMES = st.builds(lambda p, s, bad, t: p + s + bad + t, st.sampled_from(["SGLANG_", "NIXL_", "MOONCAKE_"]),
                      st.text(UPPER, max_size=4), st.sampled_from(["=", "\n", "\r", " ", "-", ".", "é", "$", "'"]),
                      st.text(UPPER, max_size=3))


@settings(max_examples=examples(25, deep_count=300), deadline=None)
@given(key=st.one_of(BAD_NAMES, st.builds(lambda d, s: d + s, st.sampled_from("0123456789"), st.text(UPPER))),
       backend=st.sampled_from(backends.names()))
def test_a_name_no_environment_can_carry_is_refused(key, backend):
    code, text, _ = _render({key: "1"}, backend)
    assert code == 2 and "launch.env" in text
