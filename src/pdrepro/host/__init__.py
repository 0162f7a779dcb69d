"""Access to the host the bundle runs on, one module per way in: its tools on PATH (``tools``), the Docker
engine (``docker``), sysfs and the RDMA devices under it (``sysfs``), and nvidia-smi (``nvidia``).
Every step that looks at the host (doctor, the sweep's provenance, versions, the build checks, the smoke)
goes through these, so a timeout, a missing tool or an unreachable engine reads the same everywhere."""
