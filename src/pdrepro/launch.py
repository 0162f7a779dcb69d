"""What runs on the cluster: server and router argv, their environment, and
the variables the compose files read, all built here from a scenario and a
``Site`` (where things are on the nodes).

The compose files in ``compose/`` spell the same commands with ``${VARS}``;
a test renders them with ``docker compose config`` and requires the argv to be
identical to the lists built here, so the printed commands, the env files and
what the containers run cannot drift apart.
"""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .pins import load_pins
from .scenario import LAUNCH_ENV_FIXED, LAUNCH_ENV_TUNABLES, Launch, Scenario

# As in the published commands; the GPU image puts its venv's python first on PATH.
PYTHON = "python"
SERVER_MODULE = "sglang.launch_server"
ROUTER_MODULE = "sglang_router.launch_router"

# Where things are on a node unless the operator says otherwise. They are
# written into the env files so that each node's compose reads one value.
DEFAULT_MODEL_ROOT = "/models"
DEFAULT_DATASET = "/data/ShareGPT_V3_unfiltered_cleaned_split.json"
DEFAULT_IB_DEVICES = "/etc/pdrepro/ib_devices.json"
DEFAULT_LOG_DIR = "/var/log/pdrepro"
MEMLOCK_UNLIMITED = -1
# Loading a 235B model takes many minutes; a server is not unhealthy before this.
DEFAULT_START_PERIOD = "3600s"

COMPOSE_FILES = {"prefill": "compose/prefill.yaml", "decode": "compose/decode.yaml", "regular": "compose/regular.yaml"}


def parse_ip(value: str | None, option: str) -> str:
    if not value:
        raise UserError(f"missing {option}: give the node's RDMA-reachable IP address, e.g. {option} 10.0.0.1")
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        raise UserError(f"{option} {value!r} is not an IP address; give the node's RDMA-reachable address (a host name is not accepted)") from None
    if address.version != 4:
        # The compose files build URLs as http://IP:PORT, which IPv6 would need bracketed.
        raise UserError(f"{option} {value!r}: IPv6 is not supported by the compose files; give the node's IPv4 address")
    if address.is_unspecified or address.is_multicast or str(address) == "255.255.255.255":
        # Each server advertises this address to the other side (SGLANG_HOST_IP).
        raise UserError(f"{option} {value!r} is not a host address the other node can reach; give the node's RDMA-reachable address")
    return str(address)


def check_two_node_ips(prefill_ip: str, decode_ip: str) -> None:
    """A loopback address reaches the other node only when both are the same node."""
    if prefill_ip == decode_ip:
        return
    for option, ip in (("--prefill-ip", prefill_ip), ("--decode-ip", decode_ip)):
        if ipaddress.ip_address(ip).is_loopback:
            raise UserError(f"{option} {ip}: a loopback address cannot be reached from the other node; "
                            "give the node's RDMA-reachable address (or the same address twice for one node)")


def parse_gpus(value: str, option: str = "--gpus") -> tuple[int, ...]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items or not all(v.isdigit() for v in items):
        raise UserError(f"{option} {value!r}: expected GPU ids separated by commas, e.g. 0,1,2,3")
    gpus = tuple(int(v) for v in items)
    if len(set(gpus)) != len(gpus):
        raise UserError(f"{option} {value!r}: a GPU id is listed twice; list each once")
    return gpus


def check_ib_devices(path: Path, tp: int) -> None:
    """The file SGLang reads for --disaggregation-ib-device: a JSON object from
    GPU id (or "default"/"*") to a comma list of RDMA device names."""
    if path.suffix != ".json":
        raise UserError(f"--ib-devices {path}: the name must end in .json (SGLang reads other values as a device list)")
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"--ib-devices {path}: no such file; create it with `pdrepro ib-devices --out {path}`") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--ib-devices {path}: not readable JSON ({exc}); regenerate it with `pdrepro ib-devices`") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"--ib-devices {path}: expected a JSON object such as {{\"0\": \"mlx5_0\", ...}}")
    for key, devices in data.items():
        if not (str(key).isdigit() or key in ("default", "*")):
            raise UserError(f"--ib-devices {path}: key {key!r} is neither a GPU id nor \"default\"/\"*\"")
        if not isinstance(devices, str) or not all(d.strip() for d in devices.split(",")):
            raise UserError(f"--ib-devices {path}: GPU {key} maps to {devices!r}; give a comma list of device names such as \"mlx5_0,mlx5_1\"")
    if "default" not in data and "*" not in data:
        uncovered = [g for g in range(tp) if str(g) not in data]
        if uncovered:
            raise UserError(
                f"--ib-devices {path}: GPU {uncovered[0]} has no device and there is no \"default\"; "
                f"map GPUs 0..{tp - 1} (indices inside the container)"
            )


def gpu_image() -> str:
    pins = load_pins()
    if not pins.get("GPU_IMAGE"):
        raise UserError("versions.env has no GPU_IMAGE; add the GPU image name there (the one `make build` tags)")
    return pins["GPU_IMAGE"]


@dataclass(frozen=True)
class Site:
    """Where the stack runs: addresses, paths on the nodes, GPU ids per node."""

    prefill_ip: str
    decode_ip: str
    model_path: str
    dataset_path: str
    ib_devices_file: str
    gpus: tuple[int, ...]
    image: str
    log_dir: str = DEFAULT_LOG_DIR
    memlock: int = MEMLOCK_UNLIMITED


def _url(ip: str, port: int) -> str:
    return f"http://{ip}:{port}"


class Plan:
    """The launch of one scenario at one site, checked once on construction."""

    def __init__(self, scenario: Scenario, site: Site):
        if scenario.launch is None:
            raise UserError(f"scenario {scenario.name} has no launch section; add one (see the shipped h20-qwen3-235b-1p1d)")
        self.scenario = scenario
        self.launch: Launch = scenario.launch
        self.site = site
        self._check_compose_can_express()
        self.prefill_gpus, self.decode_gpus = (
            self._split("prefill/decode", scenario.parallel.prefill_tp, scenario.parallel.decode_tp) if self.disaggregated else ((), ())
        )
        self.regular_gpus = self._split("regular", self.regular_tp, self.regular_tp) if "regular" in self.launch.stacks else ((), ())

    @property
    def disaggregated(self) -> bool:
        return "disaggregated" in self.launch.stacks

    @property
    def regular_tp(self) -> int:
        return self.launch.regular_tp or self.scenario.parallel.prefill_tp

    def _check_compose_can_express(self) -> None:
        # These flags are written literally in compose/*.yaml so that the file
        # itself shows the published launch; turning one off needs an edit there.
        for flag in ("trust_remote_code", "disable_radix_cache", "enable_request_time_stats_logging"):
            if not getattr(self.launch, flag):
                raise UserError(
                    f"scenario {self.scenario.name}: launch.{flag} is false, but compose/*.yaml always pass "
                    f"--{flag.replace('_', '-')}; set it to true or edit the compose files"
                )

    def _split(self, what: str, tp_a: int, tp_b: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        gpus = self.site.gpus
        if self.site.prefill_ip == self.site.decode_ip:
            # One node runs both servers: they need disjoint GPU sets.
            if len(gpus) < tp_a + tp_b:
                raise UserError(
                    f"--gpus {','.join(map(str, gpus))}: both {what} servers run on {self.site.prefill_ip} with TP "
                    f"{tp_a} and {tp_b}, which needs {tp_a + tp_b} GPUs; list more GPU ids or use two nodes"
                )
            return gpus[:tp_a], gpus[tp_a:tp_a + tp_b]
        tp = max(tp_a, tp_b)
        if len(gpus) < tp:
            raise UserError(f"--gpus {','.join(map(str, gpus))}: the {what} TP is {tp}, larger than the {len(gpus)} GPUs given; list at least {tp} GPU ids")
        return gpus[:tp_a], gpus[:tp_b]

    # ---- argv -----------------------------------------------------------
    def _server_common(self, port: int, tp: int) -> list[str]:
        launch = self.launch
        argv = [PYTHON, "-m", SERVER_MODULE,
                "--model-path", self.site.model_path,
                "--host", "0.0.0.0", "--port", str(port),
                "--tp-size", str(tp),
                "--dtype", self.scenario.model.dtype,
                "--trust-remote-code",
                "--stream-interval", str(launch.stream_interval),
                "--chunked-prefill-size", str(launch.chunked_prefill_size),
                "--disable-radix-cache"]
        return argv

    def _server_tail(self) -> list[str]:
        return ["--enable-request-time-stats-logging", *self.extra_server_args]

    @property
    def extra_server_args(self) -> list[str]:
        extra = list(self.launch.extra_server_args)
        if self.launch.enable_metrics and "--enable-metrics" not in extra:
            extra.append("--enable-metrics")
        return extra

    def prefill_argv(self) -> list[str]:
        ports = self.launch.ports
        return [*self._server_common(ports.prefill, self.scenario.parallel.prefill_tp),
                "--disaggregation-mode", "prefill",
                "--disaggregation-bootstrap-port", str(ports.bootstrap),
                "--disaggregation-transfer-backend", self.launch.transfer_backend,
                "--disaggregation-ib-device", self.site.ib_devices_file,
                *self._server_tail()]

    def decode_argv(self) -> list[str]:
        return [*self._server_common(self.launch.ports.decode, self.scenario.parallel.decode_tp),
                "--disaggregation-mode", "decode",
                "--disaggregation-transfer-backend", self.launch.transfer_backend,
                "--disaggregation-ib-device", self.site.ib_devices_file,
                *self._server_tail()]

    def router_argv(self) -> list[str]:
        ports = self.launch.ports
        return [PYTHON, "-m", ROUTER_MODULE,
                "--host", "0.0.0.0", "--port", str(ports.router),
                "--pd-disaggregation",
                # The bootstrap port must be given: without it the router assumes none.
                "--prefill", _url(self.site.prefill_ip, ports.prefill), str(ports.bootstrap),
                "--decode", _url(self.site.decode_ip, ports.decode),
                "--policy", self.launch.router_policy]

    def regular_ips(self) -> tuple[str, str]:
        return self.site.prefill_ip, self.site.decode_ip

    def regular_argv(self, index: int) -> list[str]:
        return [*self._server_common(self.launch.ports.regular[index], self.regular_tp), *self._server_tail()]

    def regular_router_argv(self) -> list[str]:
        ports = self.launch.ports
        urls = [_url(ip, port) for ip, port in zip(self.regular_ips(), ports.regular)]
        return [PYTHON, "-m", ROUTER_MODULE,
                "--host", "0.0.0.0", "--port", str(ports.router),
                "--worker-urls", *urls,
                "--policy", self.launch.router_policy]

    # ---- environment ----------------------------------------------------
    @staticmethod
    def gpu_env(gpus: tuple[int, ...]) -> dict[str, str]:
        """The server's GPUs: the container reserves all of them, CUDA picks these."""
        return {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus))}

    def server_env(self, role: str, instance: int = 0) -> dict[str, str]:
        """What the servers see besides the image's own environment."""
        if role == "regular":
            return self.gpu_env(self.regular_gpus[instance])
        env = {"SGLANG_HOST_IP": self.site.prefill_ip if role == "prefill" else self.site.decode_ip}
        env.update({k: self.launch.env[k] for k in LAUNCH_ENV_FIXED})
        env.update({k: v for k, v in self.launch.env.items() if k in LAUNCH_ENV_TUNABLES})
        env.update(self.gpu_env(self.prefill_gpus if role == "prefill" else self.decode_gpus))
        return env

    # ---- compose variables ----------------------------------------------
    def _common_vars(self) -> list[tuple[str, str, str]]:
        s = self.site
        return [
            ("GPU_IMAGE", self.site.image, "image with SGLang, Mooncake and the router (docker/versions.env)"),
            ("MODEL_PATH", s.model_path, "model folder, mounted read-only at the same path"),
            ("DATASET_PATH", s.dataset_path, "ShareGPT JSON for the bench client, mounted read-only"),
            ("DTYPE", self.scenario.model.dtype, ""),
            ("STREAM_INTERVAL", str(self.launch.stream_interval), ""),
            ("CHUNKED_PREFILL_SIZE", str(self.launch.chunked_prefill_size), "-1 turns chunked prefill off"),
            ("SERVER_EXTRA_ARGS", shlex.join(self.extra_server_args), "appended to every server command; empty in the published launch"),
            ("ROUTER_PORT", str(self.launch.ports.router), ""),
            ("ROUTER_POLICY", self.launch.router_policy, ""),
            ("LOG_DIR", s.log_dir, "host folder receiving <service>.log; outlives the containers"),
            ("MEMLOCK", str(s.memlock), "locked-memory limit in bytes; -1 = unlimited (RDMA needs it large)"),
            ("SERVER_START_PERIOD", DEFAULT_START_PERIOD, "time a server may take to load before health checks count"),
        ]

    def _pd_vars(self) -> list[tuple[str, str, str]]:
        s, ports = self.site, self.launch.ports
        out = [
            ("PREFILL_IP", s.prefill_ip, "prefill node, RDMA-reachable address"),
            ("DECODE_IP", s.decode_ip, "decode node (runs the router too)"),
            ("PREFILL_PORT", str(ports.prefill), ""),
            ("DECODE_PORT", str(ports.decode), ""),
            ("BOOTSTRAP_PORT", str(ports.bootstrap), "prefill's KV-transfer bootstrap port, given to the router"),
            ("PREFILL_TP", str(self.scenario.parallel.prefill_tp), ""),
            ("DECODE_TP", str(self.scenario.parallel.decode_tp), ""),
            ("PREFILL_GPU_IDS", ",".join(map(str, self.prefill_gpus)), "host GPU ids (CUDA_VISIBLE_DEVICES); SGLang numbers them 0..TP-1"),
            ("DECODE_GPU_IDS", ",".join(map(str, self.decode_gpus)), ""),
            ("IB_DEVICES_FILE", s.ib_devices_file, "GPU-to-RDMA-device map (JSON), mounted read-only at the same path"),
            ("TRANSFER_BACKEND", self.launch.transfer_backend, ""),
        ]
        out += [(k, self.launch.env[k], "") for k in LAUNCH_ENV_FIXED]
        return out

    def _regular_vars(self) -> list[tuple[str, str, str]]:
        ip1, ip2 = self.regular_ips()
        p1, p2 = self.launch.ports.regular
        return [
            ("REGULAR_1_IP", ip1, "node of the first regular instance"),
            ("REGULAR_2_IP", ip2, "node of the second instance and the router"),
            ("REGULAR_1_PORT", str(p1), ""),
            ("REGULAR_2_PORT", str(p2), ""),
            ("REGULAR_TP", str(self.regular_tp), ""),
            ("REGULAR_1_GPU_IDS", ",".join(map(str, self.regular_gpus[0])), ""),
            ("REGULAR_2_GPU_IDS", ",".join(map(str, self.regular_gpus[1])), ""),
        ]

    def env_files(self) -> dict[str, list[tuple[str, str, str]]]:
        """File name -> (variable, value, comment) rows. One file per compose
        file; the disaggregated stack's two nodes share the same values."""
        files = {}
        if self.disaggregated:
            tunables = [(k, v, "") for k, v in self.launch.env.items() if k in LAUNCH_ENV_TUNABLES]
            rows = self._common_vars() + self._pd_vars() + tunables
            files["prefill.env"] = rows
            files["decode.env"] = rows
        if "regular" in self.launch.stacks:
            files["regular.env"] = self._common_vars() + self._regular_vars()
        return files


_PLAIN = re.compile(r"^[A-Za-z0-9_./:,@%+=-]*$")


def env_value(key: str, value: str) -> str:
    """A value both compose's env-file reader and a POSIX shell (`set -a; .
    file`) read back unchanged: plain, or in double quotes."""
    if _PLAIN.match(value):
        return value
    if any(c in value for c in '"$`\\\n'):
        raise UserError(f"{key} value {value!r} holds a quote, $, backquote, backslash or newline; "
                        "the env file cannot carry it the same way for compose and the shell")
    return f'"{value}"'


def format_env_file(name: str, rows: list[tuple[str, str, str]], scenario: Scenario) -> str:
    lines = [
        f"# {name}: compose variables for scenario {scenario.name} (written by `pdrepro render`).",
        "# Copy to the node and pass with --env-file; it also sources in a shell (set -a; . FILE).",
        "",
    ]
    for key, value, comment in rows:
        if comment:
            lines.append(f"# {comment}")
        lines.append(f"{key}={env_value(key, value)}")
    unset = [k for k in LAUNCH_ENV_TUNABLES if k not in {r[0] for r in rows}]
    if name != "regular.env" and unset:
        lines += ["", "# Optional tunables, passed to the servers only when set here (unset = upstream default):"]
        lines += [f"#{k}=" for k in unset]
    return "\n".join(lines) + "\n"


def shell_line(env: dict[str, str], argv: list[str]) -> str:
    """argv as an operator would type it: env prefix, then one flag per line."""
    head = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    words = [shlex.quote(a) for a in argv]
    # python3 -m module stays on the first line with the environment.
    first = " ".join(head + words[:3])
    rest: list[str] = []
    for word, raw in zip(words[3:], argv[3:]):
        if raw.startswith("--") or not rest:
            rest.append(word)
        else:
            rest[-1] += " " + word
    return " \\\n    ".join([first, *rest])


def commands_text(plan: Plan, env_dir: str) -> str:
    """The per-node recipe: what to start, and what each container runs."""
    s = plan.site
    blocks = []

    def block(title: str, up: str, services: list[tuple[str, dict, list[str]]]) -> None:
        out = [f"## {title}", f"$ {up}", ""]
        for name, env, argv in services:
            out += [f"# {name} runs:", shell_line(env, argv), ""]
        blocks.append("\n".join(out))

    if plan.disaggregated:
        block(f"prefill node {s.prefill_ip}",
              f"docker compose -f {COMPOSE_FILES['prefill']} --env-file {env_dir}/prefill.env up -d --wait",
              [("prefill", plan.server_env("prefill"), plan.prefill_argv())])
        block(f"decode node {s.decode_ip} (after the prefill server is healthy)",
              f"docker compose -f {COMPOSE_FILES['decode']} --env-file {env_dir}/decode.env up -d --wait",
              [("decode", plan.server_env("decode"), plan.decode_argv()),
               ("router", {}, plan.router_argv())])
    if "regular" in plan.launch.stacks:
        if plan.disaggregated:
            blocks.append("# The two stacks share ports and GPUs: run one at a time (`make down` in between).\n")
        ip1, ip2 = plan.regular_ips()
        base = f"docker compose -f {COMPOSE_FILES['regular']} --env-file {env_dir}/regular.env up -d --wait"
        if ip1 == ip2:
            block(f"regular stack, node {ip1}", base,
                  [("regular-1", plan.server_env("regular", 0), plan.regular_argv(0)),
                   ("regular-2", plan.server_env("regular", 1), plan.regular_argv(1)),
                   ("regular-router", {}, plan.regular_router_argv())])
        else:
            block(f"regular stack, node {ip1}", f"{base} regular-1", [("regular-1", plan.server_env("regular", 0), plan.regular_argv(0))])
            block(f"regular stack, node {ip2} (after regular-1 is healthy)", f"{base} regular-2 regular-router",
                  [("regular-2", plan.server_env("regular", 1), plan.regular_argv(1)),
                   ("regular-router", {}, plan.regular_router_argv())])
    return "\n".join(blocks)
