"""Markdown reference of the command line, read off the argparse parser itself.

Every subcommand gets its usage line, its description and one entry per argument (help,
default, choices), in the groups its parser declares. Only argparse's public attributes of
actions are read, plus the formatter's help expansion so ``%(default)s`` reads as in ``--help``.
"""

from __future__ import annotations

import argparse
from pathlib import PurePath

from .markdown import prose

# A fixed width so the usage lines do not depend on the terminal the generator runs in.
USAGE_WIDTH = 100


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            found += [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return found


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = _formatter(parser)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _shown(value: object) -> str:
    if isinstance(value, PurePath):
        value = str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def _argument(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    formatter = _formatter(parser)
    if action.option_strings:
        # Each spelling of an option (an alias such as `tune --collect` for `--judge`) in its own code span.
        takes = " " + formatter._format_args(action, action.dest.upper()) if action.nargs != 0 else ""
        names = "`, `".join(f"{option}{takes}" for option in action.option_strings)
    else:
        names = formatter._format_args(action, action.dest)
    text = prose(formatter._expand_help(action)) if action.help else ""
    details = []
    if action.required and action.option_strings:
        details.append("required")
    # Choices are stated when the usage hides them behind a metavar; otherwise `{a,b}` shows them.
    if action.choices is not None and action.metavar is not None:
        details.append("choices: " + ", ".join(f"`{c}`" for c in action.choices))
    # A flag's False/None default says nothing a reader needs, and a help that names its default already says it.
    if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0 and "default" not in text:
        details.append("default: " + _shown(action.default))
    line = f"- `{names}`"
    if text:
        line += f": {text}"
    if details:
        line += f" ({'; '.join(details)})"
    return line


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    lines: list[str] = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions
                   if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]
        if not actions:
            continue
        title = group.title or "arguments"
        lines += ["", f"{title[0].upper()}{title[1:]}:", ""]
        lines += [_argument(parser, a) for a in actions]
    return lines


def _command(parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    lines = [f"{'#' * level} `{parser.prog}`", ""]
    if summary:
        summary = prose(summary)
        lines += [f"{summary[0].upper()}{summary[1:]}.", ""] if not summary.endswith(".") else [summary, ""]
    lines += ["```text", _usage(parser), "```"]
    if parser.description:
        lines += ["", prose(parser.description)]
    lines += _arguments(parser)
    for _name, text, sub in _subcommands(parser):
        lines += [""] + _command(sub, text, level + 1)
    return lines


def render_cli(parser: argparse.ArgumentParser) -> str:
    """The whole reference page: an index of the subcommands, then one section each."""
    lines = [f"# `{parser.prog}` command reference", ""]
    if parser.description:
        lines += [parser.description, ""]
    lines += ["Every command prints the same text with `--help`. Exit status: 0 success, 1 a measurement "
              "failed a check, 2 bad input (one line naming the input and the fix).", ""]
    commands = _subcommands(parser)
    lines += [f"- [`{name}`](#{_anchor(sub.prog)}): {prose(text)}" for name, text, sub in commands]
    lines += ["", "```text", _usage(parser), "```"] + _arguments(parser)
    for _name, text, sub in commands:
        lines += [""] + _command(sub, text, 2)
    return "\n".join(lines) + "\n"


def _anchor(title: str) -> str:
    """GitHub's heading anchor for a heading of inline code (lower case, spaces to dashes, punctuation dropped)."""
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")
