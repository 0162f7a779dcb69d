"""The generated reference pages: current in docs/reference, complete, and drawn from the parser and schemas."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from clihelp import assert_one_line_error, pdrepro

from pdrepro.commands import build_parser
from pdrepro.commands.docs import reference_pages
from pdrepro.docgen.cli_reference import render_cli
from pdrepro.docgen.schema_reference import render_schema
from pdrepro.scenario import schemagen

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return reference_pages()


def test_committed_reference_is_current(pages):
    stale = [name for name, text in pages.items()
             if not (REFERENCE / name).is_file() or (REFERENCE / name).read_text() != text]
    assert not stale, f"docs/reference/{', '.join(stale)} out of date: run `make docs` and commit the result"
    extra = sorted({p.name for p in REFERENCE.glob("*.md")} - set(pages))
    assert not extra, f"docs/reference holds pages no generator writes: {extra}; delete them or add a generator"


def _walk(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _walk(sub)


def test_every_command_and_option_is_in_the_cli_page(pages):
    text = pages["cli.md"]
    parsers = list(_walk(build_parser()))
    assert len(parsers) > 10, "the walk found almost no subcommands"
    for parser in parsers[1:]:
        assert f"## `{parser.prog}`" in text, f"{parser.prog} has no section"
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in text.split(f"`{parser.prog}`", 1)[1], f"{parser.prog} {option} missing"


def test_option_help_choices_and_defaults_are_read_from_the_parser():
    parser = argparse.ArgumentParser(prog="tool", description="Top.")
    sub = parser.add_subparsers()
    run = sub.add_parser("run", help="run it", description="Runs | things.")
    run.add_argument("target", help="what to run")
    run.add_argument("--mode", choices=("fast", "slow"), default="slow", help="speed, a|b")
    run.add_argument("--tries", type=int, default=3, help="attempts")
    run.add_argument("--limit", type=int, default=7, help="stop after N (default %(default)s)")
    run.add_argument("--level", metavar="N", choices=(1, 2), default=1, help="depth")
    run.add_argument("--dry", action="store_true", help="print only")
    text = render_cli(parser)
    assert "- [`run`](#tool-run): run it" in text
    assert "## `tool run`" in text and "Runs | things." in text
    assert "- `--mode {fast,slow}`: speed, a|b (default: `slow`)" in text
    assert "- `--tries TRIES`: attempts (default: `3`)" in text
    # A help that states its default is not given a second one; a metavar hides the choices, so they are listed.
    assert "- `--limit LIMIT`: stop after N (default 7)\n" in text
    assert "- `--level N`: depth (choices: `1`, `2`; default: `1`)" in text
    assert "- `--dry`: print only\n" in text and "- `target`: what to run" in text


def test_environment_defaults_are_left_out(monkeypatch):
    # render's --prefill-ip defaults to $PREFILL_IP: a site's value must not end up in the reference.
    monkeypatch.setenv("PREFILL_IP", "203.0.113.7")
    assert "203.0.113.7" not in reference_pages()["cli.md"]


def test_every_schema_key_is_in_its_page(pages):
    for name in schemagen.MODELS:
        schema = json.loads(schemagen.render(name))
        text = pages[f"{name}.md"]
        for obj in [schema, *schema["$defs"].values()]:
            for key in obj.get("properties", {}):
                assert f"| `{key}` |" in text, f"{name}: key {key} missing from docs/reference/{name}.md"
        for def_name in schema["$defs"]:
            assert f"\n## {def_name}\n" in text, f"{name}: no section for {def_name}"


def test_schema_page_states_types_limits_and_links():
    schema = {
        "title": "Top", "type": "object", "additionalProperties": False, "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 64, "description": "how many"},
            "part": {"anyOf": [{"$ref": "#/$defs/Part"}, {"type": "null"}], "default": None},
            "mode": {"enum": ["a", "b"], "default": "a"},
        },
        "$defs": {"Part": {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}}},
    }
    text = render_schema(json.dumps(schema), "Top file", "top")
    assert "| `size` | integer | yes |  | >= 1; <= 64 | how many |" in text
    assert "| `part` | [Part](#part) or null | no | `null` |  |  |" in text
    assert '| `mode` | one of `"a"`, `"b"` | no | `"a"` |  |  |' in text
    assert "## Part\n\nOther keys are allowed." in text and "| `names` | list of string |" in text
    assert text.index("## Top") < text.index("## Part")


def test_docs_command_writes_prints_and_refuses(tmp_path):
    result = pdrepro("docs", "--write", tmp_path / "ref")
    assert result.rc == 0
    assert sorted(p.name for p in (tmp_path / "ref").iterdir()) == [
        "ab-summary.md", "baseline.md", "cli.md", "diagnosis.md", "fault-summary.md", "load-summary.md", "node-record.md",
        "scenario.md", "summary.md",
        "tune-summary.md", "verdict.md"]
    for page in ("summary", "fault-summary", "verdict"):  # every page written can be printed by name
        assert pdrepro("docs", page).out == (tmp_path / "ref" / f"{page}.md").read_text()
    assert_one_line_error(pdrepro("docs"), "docs", "name the page")
    (tmp_path / "file").write_text("")
    assert_one_line_error(pdrepro("docs", "--write", tmp_path / "file"), "docs", "is a file")


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def test_links_between_the_docs_resolve():
    # A newcomer follows these links from the README; a moved page must not leave one dangling.
    files = [ROOT / "README.md", *DOCS.rglob("*.md")]
    broken = []
    for path in files:
        for target, _anchor in LINK.findall(path.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert len(files) > 3
    assert not broken, "links to files that are not there: " + "; ".join(broken)


def test_prose_escapes_markdown_outside_code_spans():
    from pdrepro.docgen.markdown import prose

    assert prose("RUN/bench/*.jsonl and RUN/logs/*.log") == r"RUN/bench/\*.jsonl and RUN/logs/\*.log"
    assert prose("default results/gpu-check-<UTC time>") == "default results/gpu-check-&lt;UTC time&gt;"
    assert prose("run `ls *.log <dir>` first") == "run `ls *.log <dir>` first"


def test_the_readme_stays_an_entry_page():
    # What the bundle does, the two commands, the quick start, where to read on: details belong in docs/guide.
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move the detail into docs/guide/ (at most 300)"
    text = "\n".join(lines)
    assert "make smoke" in text and "make test" in text and "make repro" in text
    assert "docs/README.md" in text and "docs/reference/cli.md" in text


def test_every_docs_page_is_on_the_map():
    # docs/README.md is where a newcomer finds a page; one it does not link is as good as missing.
    index = (DOCS / "README.md").read_text()
    linked = {(DOCS / target).resolve() for target, _anchor in LINK.findall(index) if "://" not in target}
    pages = {p.resolve() for p in DOCS.rglob("*.md") if p.name != "README.md"}
    missing = sorted(str(p.relative_to(DOCS.resolve())) for p in pages - linked)
    assert not missing, f"docs pages docs/README.md does not link: {', '.join(missing)}; add each to its table"
