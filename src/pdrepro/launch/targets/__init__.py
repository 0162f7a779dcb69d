"""Where a launch plan is placed: one module per target, each rendering the
same ``launch.LaunchPlan`` (compose env files, Kubernetes manifests, ...)."""
