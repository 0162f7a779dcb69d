#!/usr/bin/env bash
# Entry point of a SLURM node container of the local test cluster.
# Usage: node.sh controller|compute
# /cluster holds what the whole cluster shares: slurm.conf and munge.key,
# written by scripts/slurm-smoke.sh before the containers start.
set -euo pipefail
role=${1:?usage: node.sh controller|compute}
say() { printf '[slurm %s %s] %s\n' "$role" "$(hostname)" "$*" >&2; }

for f in /cluster/slurm.conf /cluster/munge.key; do
  [ -s "$f" ] || { say "missing $f: start the cluster with scripts/slurm-smoke.sh"; exit 2; }
done
# munged refuses a key readable by others or owned by another user.
install -o munge -g munge -m 0400 /cluster/munge.key /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
runuser -u munge -- /usr/sbin/munged
ln -sf /cluster/slurm.conf /etc/slurm/slurm.conf
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm

case $role in
  controller) say "starting slurmctld"; exec /usr/sbin/slurmctld -D -c ;;
  compute)    say "starting slurmd"; exec /usr/sbin/slurmd -D -N "$(hostname)" ;;
  *) say "unknown role $role (controller|compute)"; exit 2 ;;
esac
