"""SGLang: its HTTP server per role, its Rust router, its bench client."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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
    # /readiness answers only with workers behind the router; older routers 404 it, /health_generate stands in.
    router_health_paths: tuple[str, ...] = ("/readiness", "/health_generate")
    # Newer workers serve /health_generate (runs one token); /health is the fallback.
    worker_health_paths: tuple[str, ...] = ("/health_generate", "/health")
    info_path: str = "/get_server_info"
    host_ip_env: str = "SGLANG_HOST_IP"
    env_prefixes: tuple[str, ...] = ("SGLANG_",)
    modules: tuple[str, ...] = ("sglang.launch_server", "sglang_router.launch_router")
    distributions: tuple[str, ...] = ("sglang", "sglang-router")


ENGINE = SGLang()
