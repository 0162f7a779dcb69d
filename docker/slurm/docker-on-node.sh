#!/usr/bin/env bash
# The docker command on a node of the local test cluster. The nodes are
# themselves containers that reach the host's Docker engine through its
# socket, so a node's own network is its container's, not the engine host's:
# `--network host`, which the sbatch script gives the servers on a real node,
# becomes this node container's network. Everything else passes unchanged.
set -euo pipefail
self=$(sed -n 's|.*/containers/\([0-9a-f]\{64\}\)/hostname .*|\1|p' /proc/self/mountinfo | head -n1)
args=() prev=""
for a in "$@"; do
  if [ "$prev" = --network ] && [ "$a" = host ]; then
    [ -n "$self" ] || { echo "docker-on-node: cannot find this node's container id" >&2; exit 2; }
    a=container:$self
  fi
  args+=("$a")
  prev=$a
done
exec /usr/bin/docker "${args[@]}"
