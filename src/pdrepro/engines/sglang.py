"""SGLang: its HTTP server per role, its Rust router, its bench client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .spec import RouterSpec, ServerSpec


@dataclass(frozen=True)
class SGLang:
    name: str = "sglang"
    label: str = "SGLang"
    # Mooncake over TCP runs as `mooncake` with MC_FORCE_TCP=1 from the backend's plan_env: SGLang's own
    # mooncake_tcp sets the same variable, and the recorded one-box runs started with this argv.
    backend_flags: Mapping[str, str] = field(default_factory=lambda: {
        "mooncake": "mooncake", "mooncake_tcp": "mooncake", "nixl": "nixl"})
    server_module: str = "sglang.launch_server"
    router_module: str = "sglang_router.launch_router"
    bench_module: str = "sglang.benchmark.serving"
    # The bench client's --backend: the server API it speaks.
    bench_backend: str = "sglang"
    # /readiness answers only with workers behind the router; older routers 404 it, /health_generate stands in.
    router_health_paths: tuple[str, ...] = ("/readiness", "/health_generate")
    # Answers while the router process runs, with or without workers: what a restart probe may ask.
    router_liveness_path: str = "/liveness"
    # Newer workers serve /health_generate (runs one token); /health is the fallback.
    worker_health_paths: tuple[str, ...] = ("/health_generate", "/health")
    info_path: str = "/get_server_info"
    host_ip_env: str = "SGLANG_HOST_IP"
    env_prefixes: tuple[str, ...] = ("SGLANG_",)
    # The variables its disaggregation transfer path reads, generated from the pinned release (make knobs).
    knob_file: str | None = "sglang.json"
    # Its server's option strings (every alias) by field, generated from its argument definitions (make knobs):
    # the guards resolve a flag's spelling the way its parser does.
    flag_file: str | None = "sglang-flags.json"
    modules: tuple[str, ...] = ("sglang.launch_server", "sglang_router.launch_router")
    distributions: tuple[str, ...] = ("sglang", "sglang-router")
    # provenance.json's pins field -> the versions.env key holding the pinned commit.
    pin_keys: Mapping[str, str] = field(default_factory=lambda: {"sglang_commit": "SGLANG_COMMIT"})
    # What-ran rows: the image builds the pinned commit as <release>+g<commit>, the release under this key;
    # the router's distribution and the key pinning its version.
    release_pin_key: str = "SGLANG_NEAREST_RELEASE"
    router_distribution: str = "sglang-router"
    router_pin_key: str = "SGLANG_ROUTER_VERSION"
    # The server flag that takes a fraction of the GPU memory; the plan refuses it twice.
    mem_fraction_flag: str = "--mem-fraction-static"

    def server_argv(self, spec: ServerSpec) -> list[str]:
        """The published launch's flags (compose/*.yaml show the same), then the role's, then the extras."""
        argv = [spec.python, "-m", self.server_module,
                "--model-path", spec.model_path,
                "--host", "0.0.0.0", "--port", str(spec.port),
                "--tp-size", str(spec.tp),
                "--dtype", spec.dtype,
                "--trust-remote-code",
                "--stream-interval", str(spec.stream_interval),
                "--chunked-prefill-size", str(spec.chunked_prefill_size),
                "--disable-radix-cache"]
        if spec.mode is not None:
            argv += ["--disaggregation-mode", spec.mode]
            if spec.bootstrap_port is not None:
                argv += ["--disaggregation-bootstrap-port", str(spec.bootstrap_port)]
            if spec.backend is not None:
                argv += ["--disaggregation-transfer-backend", self.backend_flags[spec.backend]]
            if spec.ib_devices_file is not None:
                argv += ["--disaggregation-ib-device", spec.ib_devices_file]
        return [*argv, "--enable-request-time-stats-logging", *self.server_extras(spec)]

    def server_extras(self, spec: ServerSpec) -> list[str]:
        """The argv's tail after the published flags (compose files pass it as one variable)."""
        extra = list(spec.extra_args)
        if spec.metrics and "--enable-metrics" not in extra:
            extra.append("--enable-metrics")
        if spec.mem_fraction is not None:
            extra += [self.mem_fraction_flag, f"{spec.mem_fraction:g}"]
        return extra + list(spec.site_args)

    def router_argv(self, spec: RouterSpec) -> list[str]:
        argv = [spec.python, "-m", self.router_module, "--host", "0.0.0.0", "--port", str(spec.port)]
        if spec.workers:
            argv.append("--pd-disaggregation")
            for worker in spec.workers:
                argv += [f"--{worker.role}", worker.url]
                if worker.bootstrap_port is not None:
                    # A prefill server's bootstrap port must be given: without it the router assumes none.
                    argv.append(str(worker.bootstrap_port))
        else:
            argv += ["--worker-urls", *spec.urls]
        return argv + ["--policy", spec.policy]


ENGINE = SGLang()
