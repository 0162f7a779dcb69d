"""The Docker engine, through the Docker SDK for Python: the one place a client is made and the SDK's
many kinds of failure are turned into one ``EngineUnreachable`` that each caller words for its command.

The SDK is imported on the first connection only, so the commands that never need an engine start
without it.
"""

from __future__ import annotations

import math


class EngineUnreachable(Exception):
    """No client could be made, or the engine did not answer; ``cause`` is what the SDK raised."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(first_line(cause))
        self.cause = cause

    @property
    def kind(self) -> str:
        """The SDK's exception type, e.g. ``DockerException``."""
        return type(self.cause).__name__

    @property
    def sdk_missing(self) -> bool:
        """The Docker SDK for Python is not installed."""
        return isinstance(self.cause, ImportError)


def first_line(exc: BaseException, limit: int = 200) -> str:
    """An exception as one short line: its message's first line, or its type when it has none."""
    text = str(exc)
    return text.splitlines()[0][:limit] if text else type(exc).__name__


def connect(base_url: str | None = None, *, timeout: float | None = None, ping: bool = True):
    """A client of the local engine (DOCKER_HOST or the socket), or of BASE_URL (``ssh://user@host``
    goes through the ssh client); pinged unless PING is false. EngineUnreachable when it cannot be."""
    try:
        import docker  # noqa: PLC0415 - the SDK is needed only by commands that talk to an engine

        if base_url:
            client = docker.DockerClient(base_url=base_url, use_ssh_client=base_url.startswith("ssh://"))
        elif timeout is not None:
            # The SDK documents its timeout as whole seconds.
            client = docker.from_env(timeout=math.ceil(timeout))
        else:
            client = docker.from_env()
        if ping:
            client.ping()
    except Exception as exc:  # the SDK raises several unrelated types; all mean "no engine to talk to"
        raise EngineUnreachable(exc) from None
    return client
