"""Scenarios: what to run and what to expect, validated once at load time.

A scenario is a YAML file, shipped with the package (``pdrepro/scenarios``) or
given by path. ``load_scenario`` returns a frozen ``Scenario``; every later
step reads its settings from that object and carries no defaults of its own.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

import yaml
from pydantic import Field

from ..core import runfile
from ..core.errors import UserError
from ..core.roles import SERVER_ROLES, Role, RoleSpec
from ..core.strictmodel import Record, load, tagged_union, to_plain
from ..rundir import RunDir
from . import configyaml, derivation
from .absection import AbSection
from .fingerprint import fingerprint_of
from .kvsize import Geometry, geometry_from_config, kv_bytes_per_token
from .launch_section import Launch
from .sections import Link, Model, Parallel, Reference, Sweep, Thresholds, Topology

# Version of the scenario file's format; summary.json has its own (contract.SUMMARY_SCHEMA_VERSION),
# because a scenario and a summary change apart.
# Each Literal is the field's type; the tuple of its values derives from it (a type checker reads no
# variable inside Literal[...]).
ScenarioSchemaVersion = Literal[1]
SCENARIO_SCHEMA_VERSION: int = get_args(ScenarioSchemaVersion)[0]
Kind = Literal["kv-sweep", "comparison"]
KINDS: tuple[str, ...] = get_args(Kind)
# What the KV may move over: "rdma" (the published run: the transport proof and the NIC witness are
# gates) or "any" (a box without an RDMA device may use TCP; the witness then does not apply).
Transport = Literal["rdma", "any"]
TRANSPORTS: tuple[str, ...] = get_args(Transport)


class Scenario(Record):
    """What every kind of scenario holds; a file is one of its kinds (``KvSweepScenario``,
    ``ComparisonScenario``), told apart by ``kind``, and each kind keeps the rules that differ."""

    schema_version: ScenarioSchemaVersion
    name: str
    title: str
    kind: Kind
    model: Model
    parallel: Parallel
    sweep: Sweep
    link: Link | None = None
    reference: Reference | None = None
    thresholds: Thresholds = Field(default_factory=Thresholds)
    launch: Launch | None = None
    ab: AbSection | None = Field(default=None, description="the arms of `pdrepro ab` (transfer backends)")
    topology: Topology = Field(default_factory=Topology)
    transport: Transport = Field(
        default="rdma",
        description="what the KV may move over: rdma (the transport proof and the NIC witness are gates) or any "
                    "(TCP is allowed; on a node the sweep found without RDMA devices the witness is not applicable)")
    pins_match: Literal["gate", "warn"] = Field(
        default="gate",
        description="what a difference between what ran (server versions, Mooncake, torch, CUDA) and "
                    "docker/versions.env does: gate (the pins_match check fails; a reproduction of the published "
                    "run) or warn (a warning in the report and check)")

    def role(self, role: str) -> RoleSpec:
        """What this scenario says about one server role: TP, nodes, servers per node and, with a launch
        section, its ports (a site adds the hosts: launch.Launcher.spec)."""
        role = Role(role)
        if role not in SERVER_ROLES:
            # The regular stack's servers have no topology entry: they are the comparison's own (launch.ports.regular).
            raise ValueError(f"{role} is not a disaggregated server role ({', '.join(SERVER_ROLES)})")
        nodes = self.topology.of(role)
        ports = self.launch.ports if self.launch is not None else None
        port = None if ports is None else {Role.PREFILL: ports.prefill, Role.DECODE: ports.decode}[role]
        bootstrap = ports.bootstrap if ports is not None and role is Role.PREFILL else None
        return RoleSpec(role=role, tp=self.parallel.tp(role), nodes=nodes.nodes, servers_per_node=nodes.servers_per_node,
                        port=port, bootstrap_port=bootstrap)

    def check(self, source: str) -> None:
        self._validate_port_ranges(source)
        self._check_kind(source)
        lens = set(self.sweep.prompt_lens)
        for key in ("min_bandwidth_GB_s", "max_ttft_ms"):
            extra = sorted(set(getattr(self.thresholds, key)) - lens)
            if extra:
                raise UserError(
                    f"{source}: thresholds.{key} names prompt length {extra[0]}, which sweep.prompt_lens lacks; "
                    "remove it or add the length to the sweep"
                )
        derivation.check(self.thresholds, source)

    def _check_kind(self, source: str) -> None:
        """The rules only this kind has; raise UserError naming ``source``."""

    @abstractmethod
    def check_configuration(self, configuration: str | None) -> None:
        """Refuse a --configuration this kind cannot run (the sweep's flag, None where unsaid)."""

    @abstractmethod
    def analysis_root(self, top: RunDir, run: RunDir) -> RunDir:
        """The run directory an analysis of this scenario reads: ``top`` is the sweep's --out, ``run``
        the folder one configuration's sweep wrote."""

    @abstractmethod
    def launched_configuration(self, label: str) -> str | None:
        """The --configuration a rendered launch passes its sweep, given the plan's configuration ``label``."""

    def _validate_port_ranges(self, source: str) -> None:
        # Server k of a node listens on the role's port + k (bootstrap too), so
        # with several servers per node the ranges must not run into each other.
        if self.launch is None or "disaggregated" not in self.launch.stacks:
            return
        p, t = self.launch.ports.pd(), self.topology
        ranges = {"prefill": (p.prefill, t.prefill.servers_per_node), "bootstrap": (p.bootstrap, t.prefill.servers_per_node),
                  "decode": (p.decode, t.decode.servers_per_node), "router": (self.launch.ports.router, 1)}
        names = list(ranges)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                (pa, na), (pb, nb) = ranges[a], ranges[b]
                if pa < pb + nb and pb < pa + na:
                    raise UserError(
                        f"{source}: launch.ports.{a} and launch.ports.{b} overlap: server k of a node uses port + k "
                        f"(topology servers_per_node); space them at least servers_per_node apart")

    # Derived figures, so that no later step recomputes them its own way.
    @property
    def geometry(self) -> Geometry:
        if self.model.geometry is not None:
            return self.model.geometry
        assert self.model.config_json is not None  # Model.check: exactly one of geometry and config_json
        return geometry_from_config(Path(self.model.config_json))

    @property
    def kv_bytes_per_token(self) -> int:
        return kv_bytes_per_token(self.geometry, self.model.dtype, self.parallel.prefill_tp, f"scenario {self.name}")

    def kv_bytes(self, prompt_len: int) -> int:
        return prompt_len * self.kv_bytes_per_token

    @property
    def line_rate_GB_s(self) -> float | None:
        return self.link.line_rate_GB_s if self.link else None

    def to_dict(self) -> dict:
        return to_plain(self)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @property
    def fingerprint(self) -> str:
        """sha256 of the canonical scenario, recorded in every run's provenance."""
        return fingerprint_of(self.to_dict())

    def with_thresholds(self, thresholds: Thresholds) -> Scenario:
        return self.model_copy(update={"thresholds": thresholds})


class KvSweepScenario(Scenario):
    """One configuration swept over prompt lengths, its KV transfer judged against the link's line rate."""

    kind: Literal["kv-sweep"]

    def _check_kind(self, source: str) -> None:
        if self.link is None:
            raise UserError(f"{source}: a kv-sweep scenario needs link (nics_per_node, nic_rate_Gb_s) for utilization")

    def check_configuration(self, configuration: str | None) -> None:
        if configuration is not None:
            raise UserError(f"--configuration applies to comparison scenarios only; {self.name} is a {self.kind} "
                            "scenario, drop it")

    def analysis_root(self, top: RunDir, run: RunDir) -> RunDir:
        return run

    def launched_configuration(self, label: str) -> str | None:
        return None  # one configuration: the sweep is not told which


class ComparisonScenario(Scenario):
    """Two configurations (reference.configurations) run apart, each under its own folder of the run,
    and compared with each other and with the published figures."""

    kind: Literal["comparison"]

    def check_configuration(self, configuration: str | None) -> None:
        names = sorted((self.reference.configurations if self.reference else {}) or {})
        if configuration not in names:
            raise UserError(f"scenario {self.name} compares configurations; pass --configuration, one of: {', '.join(names)}")

    def analysis_root(self, top: RunDir, run: RunDir) -> RunDir:
        return top  # analysed over all its configurations, which live under the run's top

    def launched_configuration(self, label: str) -> str | None:
        return label  # a launch places one configuration (the disaggregated one); its sweep must say which


# A scenario file as loaded: the model of its kind. The order is the one messages list the kinds in.
ScenarioFile = tagged_union(
    "kind", KvSweepScenario, ComparisonScenario, title="Scenario",
    description="A scenario file is one of two kinds, told apart by its key kind: kv-sweep (KvSweepScenario) or "
                "comparison (ComparisonScenario). Both take the same keys; a kv-sweep also needs link.")


def shipped_names() -> list[str]:
    folder = resources.files("pdrepro") / "scenarios"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _read_yaml(path: Path, what: str) -> object:
    try:
        # Through runfile: a FIFO or device named as the scenario (or left as RUN/scenario.yaml) is refused, not
        # read forever.
        text = runfile.read_text(path, errors="strict", kind=runfile.SCENARIO)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what} file; check the path") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give the {what} YAML file") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); save the {what} "
                        "file as UTF-8") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read the {what} file ({exc.strerror}); fix the path or its permissions") from None
    data = configyaml.parse(text, str(path))
    if data is None:
        raise UserError(f"{path}: the {what} file is empty; fill it in (see the shipped scenarios)")
    return data


def scenario_from_dict(data: object, source: str, base_dir: Path | None = None) -> Scenario:
    scenario: Scenario = load(ScenarioFile, data, source)
    if scenario.model.config_json is not None:
        config = Path(scenario.model.config_json)
        if not config.is_absolute() and base_dir is not None:
            config = (base_dir / config).resolve()
        model = scenario.model.model_copy(update={"config_json": str(config)})
        scenario = scenario.model_copy(update={"model": model})
    # Fail now, at the edge: an unreadable config, or heads that do not split over the TP ranks.
    kv_bytes_per_token(scenario.geometry, scenario.model.dtype, scenario.parallel.prefill_tp, source)
    return scenario


def resolve_path(spec: str | Path) -> Path:
    """The scenario file ``spec`` names: a path to a YAML file, else a shipped scenario's name."""
    path = Path(spec)
    if path.is_dir():
        raise UserError(f"{path}: is a directory, not a scenario file; give the scenario YAML file in it")
    if not path.exists():  # a FIFO or device there is refused by name when read
        if str(spec) in shipped_names():
            path = Path(str(resources.files("pdrepro") / "scenarios" / f"{spec}.yaml"))
        elif path.suffix in (".yaml", ".yml") or "/" in str(spec):
            raise UserError(f"{spec}: no such scenario file; check the path, or use a shipped name: {', '.join(shipped_names())}")
        else:
            raise UserError(f"unknown scenario {spec!r}; use a path or one of: {', '.join(shipped_names())}")
    return path


def load_scenario(spec: str | Path) -> Scenario:
    """``spec`` is a shipped scenario name or a path to a scenario YAML file."""
    path = resolve_path(spec)
    return scenario_from_dict(_read_yaml(path, "scenario"), str(path), path.parent)


def _thresholds_data(path: Path) -> object:
    data = _read_yaml(path, "thresholds")
    if isinstance(data, dict) and set(data) == {"thresholds"}:
        data = data["thresholds"]
    return data


def merge_thresholds(base: Thresholds, path: str | Path) -> Thresholds:
    """Thresholds from ``path`` laid over ``base``: a key the file names wins,
    per prompt length for the per-length bounds; every other bound stays."""
    path = Path(path)
    data = _thresholds_data(path)
    override = load(Thresholds, data, str(path), "thresholds")
    assert isinstance(data, dict)  # load() refuses anything but a mapping
    changes = {}
    for key in data:
        old, new = getattr(base, key), getattr(override, key)
        changes[key] = {**old, **new} if isinstance(old, dict) else new
    if "derivation" not in data:  # a bound the file sets is no longer the rule's: its rule goes with it
        changes["derivation"] = {k: v for k, v in base.derivation.items() if k not in data}
    return base.model_copy(update=changes)


def resolve_scenario(spec: str | None, run_dir: Path | None = None, thresholds: str | None = None) -> Scenario:
    """The one merge chain: explicit --scenario, else the run's own scenario.yaml; then --thresholds."""
    if spec is not None:
        scenario = load_scenario(spec)
    elif run_dir is not None and not Path(run_dir).is_dir():
        why = "is a file, not a directory" if Path(run_dir).exists() else "no such run directory"
        raise UserError(f"{run_dir}: {why}; give the folder holding bench/ and logs/")
    elif run_dir is not None and RunDir(Path(run_dir)).scenario_file.exists():
        scenario = load_scenario(RunDir(Path(run_dir)).scenario_file)
    else:
        where = f"{run_dir} has no scenario.yaml; " if run_dir is not None else ""
        raise UserError(f"{where}pass --scenario NAME_OR_PATH (shipped: {', '.join(shipped_names())})")
    if thresholds is not None:
        scenario = scenario.with_thresholds(merge_thresholds(scenario.thresholds, thresholds))
        scenario.check(str(thresholds))
    return scenario


def is_unbounded(rate: float) -> bool:
    return math.isinf(rate)
