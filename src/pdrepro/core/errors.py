"""Errors meant for the person at the terminal, not for a debugger."""


class UserError(Exception):
    """Bad input or environment. The message names the input and the fix.

    The CLI prints it on one line and exits with status 2; nothing else in the
    package catches it, so partial results written before it was raised stay.
    """
