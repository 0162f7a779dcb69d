#!/usr/bin/env bash
# Prove the rendered sbatch script on a real SLURM cluster made here: a
# controller and two compute nodes (compose/slurm-smoke.yaml, Debian's
# slurmctld/slurmd/munge), the smoke's script rendered by the SLURM renderer,
# submitted with sbatch, run as one 2-node job (prefill side on node1, decode
# side on node2, Mooncake TCP between them), every transfer checksum-verified.
# The cluster is always torn down; the job folder stays in OUT.
#
# Usage: slurm-smoke.sh [OUT]      (make slurm-smoke; OUT defaults to results/slurm-smoke-<time>)
# Env: SLURM_IMAGE, PYTHON (with this bundle), SLURM_SMOKE_ARGS (render options),
#      SLURM_SMOKE_RUNTIME=docker|host (docker: each side in a smoke-image container
#      started on its node through the host's Docker engine, as the GPU script does;
#      host: the sides run on the node containers themselves),
#      SLURM_SMOKE_CANCEL=1 (scancel the job once the prefill side runs, then check the cleanup),
#      COMPOSE (the compose client, as the stacks use it; make passes its choice; default "docker compose")
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'slurm-smoke: %s\n' "$*" >&2; }
die() { say "error: $*"; exit "${2:-2}"; }

image=${SLURM_IMAGE:?set SLURM_IMAGE (make slurm-smoke sets it from docker/versions.env)}
python=${PYTHON:-$here/.venv/bin/python}
out=$(realpath -m "${1:-$here/results/slurm-smoke-$(date -u +%Y%m%d-%H%M%S)}")
project=pdslurm-$(basename "$out" | tr -c 'a-z0-9\n' '-' | tail -c 32)-$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
read -r -a compose_cli <<< "${COMPOSE:-docker compose}"
compose=("${compose_cli[@]}" -p "$project" -f "$here/compose/slurm-smoke.yaml")
runtime=${SLURM_SMOKE_RUNTIME:-docker}
case $runtime in docker|host) ;; *) die "SLURM_SMOKE_RUNTIME=$runtime: use docker or host" ;; esac

docker info >/dev/null 2>&1 || die "no Docker engine answers 'docker info': install Docker (with compose v2) and start it"
"${compose_cli[@]}" version >/dev/null 2>&1 || die "the compose client '${compose_cli[*]}' does not run: install compose v2 or set COMPOSE"
docker image inspect "$image" >/dev/null 2>&1 || die "no image $image: run 'make slurm-image'"
[ ! -e "$out/cluster" ] || die "$out already holds a cluster; give a new folder"
mkdir -p "$out/cluster" "$out/shared"

# What the nodes share: the munge key and slurm.conf (SlurmUser root: the node
# containers have no other user; no cgroups: Docker already confines them).
head -c 1024 /dev/urandom > "$out/cluster/munge.key"
cpus=$(docker run --rm --entrypoint nproc "$image")
cat > "$out/cluster/slurm.conf" <<EOF
ClusterName=$project
SlurmctldHost=slurmctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
PropagateResourceLimits=NONE
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=10
MinJobAge=3600
NodeName=node[1-2] CPUs=$cpus State=UNKNOWN
PartitionName=pd Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

export SLURM_IMAGE=$image SLURM_CLUSTER_DIR=$out/cluster SLURM_SHARED_DIR=$out/shared
down() {
  local rc=$?
  trap - EXIT INT TERM
  "${compose[@]}" logs --no-color > "$out/cluster.log" 2>&1 || true
  say "tearing the cluster down (logs: $out/cluster.log)"
  "${compose[@]}" down --volumes --remove-orphans --timeout 5 >/dev/null 2>&1 || true
  exit "$rc"
}
trap down EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086
"$python" -m pdrepro.launch.targets.slurm_smoke render --out "$out/shared/smoke.sbatch" --runtime "$runtime" ${SLURM_SMOKE_ARGS:-}
started=$SECONDS
say "starting the cluster ($image, project $project, runtime $runtime)"
"${compose[@]}" up -d --quiet-pull >/dev/null
ctl() { "${compose[@]}" exec -T -w "$out/shared" slurmctld "$@"; }
on() { local node=$1; shift; "${compose[@]}" exec -T "$node" "$@"; }
for _ in $(seq 60); do
  idle=$(ctl sinfo -h -t idle -o '%D' 2>/dev/null || true)
  [ "${idle:-0}" = 2 ] && break
  sleep 1
done
[ "${idle:-0}" = 2 ] || { ctl sinfo >&2 || true; die "the two compute nodes did not come up idle within 60 s (see $out/cluster.log)"; }
say "cluster up: $(ctl sinfo -h -o '%P %a %D %t %N' | tr -s ' ')"

job_info() { ctl scontrol show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }
# The job's own containers on the engine (docker), or the smoke's processes on node1 (host).
job_left() {
  if [ "$runtime" = docker ]; then
    docker ps -a --format '{{.Names}}' | grep "^pdrepro-$project-$1-" || true
  else
    on node1 pgrep -af pdrepro.smoke || true
  fi
}

if [ "${SLURM_SMOKE_CANCEL:-}" = 1 ]; then
  job=$(ctl sbatch --parsable smoke.sbatch)
  say "submitted job $job; cancelling it once the prefill side runs"
  for _ in $(seq 60); do
    [ -n "$(job_left "$job")" ] && break
    sleep 1
  done
  started_as=$(job_left "$job")
  [ -n "$started_as" ] || die "the prefill side never started on node1"
  say "running: $started_as"
  ctl scancel "$job"
  for _ in $(seq 60); do
    state=$(job_info "$job" JobState)
    [ "$state" = CANCELLED ] && [ -z "$(job_left "$job")" ] && break
    sleep 1
  done
  left=$(job_left "$job")
  say "job $job: state $state; left behind: ${left:-none}"
  if [ "$state" != CANCELLED ] || [ -n "$left" ]; then die "scancel left the job $state with: ${left:-nothing}" 1; fi
  say "RESULT cancelled cleanly in $((SECONDS - started)) s"
  exit 0
fi

say "sbatch --wait smoke.sbatch"
set +e
job=$(ctl sbatch --parsable --wait smoke.sbatch)
rc=$?
set -e
job=${job%%;*}
[ -n "$job" ] || die "sbatch returned no job id (exit $rc)"
output=$out/shared/pdrepro-smoke-smoke-tcp-$job.out
[ -f "$output" ] && sed 's/^/  | /' "$output" >&2
state=$(job_info "$job" JobState) exit_code=$(job_info "$job" ExitCode) nodes=$(job_info "$job" NodeList)
say "job $job: state $state, exit code $exit_code, nodes $nodes, sbatch exit $rc"
if [ "$rc" -ne 0 ] || [ "$state" != COMPLETED ] || [ "$exit_code" != 0:0 ]; then die "the job failed (see $output)" 1; fi
[ "$(job_info "$job" NumNodes)" = 2 ] || die "the job ran on $nodes, not two nodes" 1
# Checked again here, from the shared folder, independent of the job's own gate.
"$python" -m pdrepro.launch.targets.slurm_smoke check "$out/shared/slurm-$job/raw" >&2 || die "checksums do not match" 1
say "RESULT passed: 2-node job $job on $nodes (runtime $runtime), every checksum matches, $((SECONDS - started)) s (job folder: $out/shared/slurm-$job)"
