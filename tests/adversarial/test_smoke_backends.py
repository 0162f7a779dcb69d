"""`--backends` (and SMOKE_BACKENDS in the agents) under any comma list: taken as known names, each once,
Mooncake among them, or refused with one line (a UserError, exit 2 at the CLI); never a traceback."""

from clihelp import pdrepro
from depth import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pdrepro.core.errors import UserError
from pdrepro.smoke.settings import BACKENDS, parse_backends

NAMES = st.sampled_from([*BACKENDS, "", " ", "MOONCAKE", "nixl ", "ucx", "mooncake_tcp", "n\nixl"])


@given(st.lists(st.text(alphabet="abcdeiklmnorxy,_ ", max_size=12), min_size=1, max_size=4))
def test_any_list_is_taken_or_refused_with_a_user_error(parts):
    text = ",".join(parts)
    try:
        got = parse_backends(text)
    except UserError as exc:
        assert "\n" not in str(exc)
        return
    assert set(got) <= set(BACKENDS) and "mooncake" in got and len(set(got)) == len(got)


@settings(max_examples=examples(15), deadline=None)
@given(st.lists(NAMES, min_size=0, max_size=4))
def test_the_cli_exits_0_or_2_with_one_line(tmp_path_factory, names):
    out = tmp_path_factory.mktemp("r")
    result = pdrepro("smoke", "--backends", ",".join(names), "--results", out / "results", "--image", "no-such-image:0",
                     "--compose-file", out / "missing.yaml")
    # A list that parses reaches the compose-file check: exit 2 as well, never a run (nothing was started).
    assert result.rc == 2, (result.rc, result.err)
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1, result.err
    assert not (out / "results").exists()
