"""Compose files written whole from the launch plan, through the templates in ``templates/``.

A service is described by what the plan says of it (``Service``: its argv, environment, port, log file,
the host paths it reads); the templates hold what every server or router service does the same way (the
log tee to the host, host network, GPU reservation, locked-memory limit, health checks). No argv is
written here or in a template: each comes from the plan, word for word.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from ..plan import DEFAULT_START_PERIOD, Plan
from .templating import compose_list, compose_map, compose_str, fill, log_wrapper

INFINIBAND = "/dev/infiniband:/dev/infiniband"


@dataclass(frozen=True)
class Service:
    name: str                                  # compose service name
    container: str
    argv: tuple[str, ...]
    port: int                                  # where its health check asks, on 127.0.0.1
    health_path: str
    log: str                                   # file name in the host's log folder
    env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[str, ...] = ()               # host paths mounted read-only at the same path
    depends_on: tuple[str, ...] = ()           # services that must be healthy first
    rdma: bool = False                         # maps the verbs devices
    router: bool = False


@dataclass(frozen=True)
class ComposeFile:
    project: str                               # compose project name (what `docker compose -p NAME down` takes)
    title: str
    up: str                                    # how the node starts it (in the file's head)
    services: tuple[Service, ...]


def _wrapper(log: str) -> str:
    return compose_str(log_wrapper(f"/logs/{shlex.quote(log)}"))


def _health(port: int, path: str, timeout: int) -> str:
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}{path}', timeout={timeout})"
    return "[" + ", ".join(compose_str(w) for w in ("CMD", "python3", "-c", probe)) + "]"


def _volumes(service: Service, log_dir: str) -> str:
    pad = " " * 6
    lines = [f"{pad}- {{type: bind, source: {compose_str(p)}, target: {compose_str(p)}, read_only: true, "
             "bind: {create_host_path: false}}" for p in service.mounts]
    lines.append(f"{pad}- {{type: bind, source: {compose_str(log_dir)}, target: /logs, bind: {{create_host_path: true}}}}")
    return "\n".join(lines)


def _depends(names: tuple[str, ...], indent: int) -> str:
    pad = " " * indent
    return "\n".join(f"{pad}{n}:\n{pad}  condition: service_healthy" for n in names)


def service_text(service: Service, plan: Plan) -> str:
    site = plan.site
    common = dict(service=service.name, image=compose_str(site.image), container=service.container,
                  wrapper=_wrapper(service.log), command=compose_list(service.argv, indent=6),
                  volumes=_volumes(service, site.log_dir), start_period=DEFAULT_START_PERIOD)
    if service.router:
        return fill("compose-router.yaml.tmpl", **common, health=_health(service.port, service.health_path, 10),
                    depends_on=_depends(service.depends_on, 6))
    depends = f"depends_on:\n{_depends(service.depends_on, 6)}" if service.depends_on else ""
    return fill("compose-server.yaml.tmpl", **common, environment=compose_map(service.env, indent=6),
                devices=f"devices: [{compose_str(INFINIBAND)}]" if service.rdma else "",
                memlock=str(site.memlock), health=_health(service.port, service.health_path, 60), depends_on=depends)


def file_text(compose: ComposeFile, plan: Plan) -> str:
    services = "\n".join(service_text(s, plan) for s in compose.services)
    return fill("compose-file.yaml.tmpl", title=compose.title, scenario=plan.scenario.name, up=compose.up,
                project=compose.project, services=services.rstrip("\n"))


def rdma_override_text(base: str, name: str, services: tuple[str, ...]) -> str:
    """The override adding the verbs devices to SERVICES of compose file BASE (written as NAME)."""
    blocks = "\n".join(f"  {s}:\n    devices: [{compose_str(INFINIBAND)}]" for s in services)
    return fill("compose-rdma.yaml.tmpl", base=base, name=name, services=blocks)
