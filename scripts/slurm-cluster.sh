#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the test that submits an emitted sweep array
# to a real Slurm (tests/sweeps/slurm.rs). Debian's packages; everything the cluster keeps (munge key
# and socket, Slurm's state, spool, logs, pid files) lives in one folder of the caller's.
#
#   scripts/slurm-cluster.sh install      installs slurm-wlm and munge (apt-get; idempotent)
#   scripts/slurm-cluster.sh start DIR    starts munged, slurmctld and slurmd on free ports and
#                                         waits until the node is idle; prints the config path
#                                         (export SLURM_CONF=… before sbatch, squeue, scancel)
#   scripts/slurm-cluster.sh stop DIR     stops them
#
# Needs root (slurmd runs jobs as their user, munged keeps its key owner-only); says so and
# exits 2 otherwise.
set -euo pipefail

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "slurm-cluster: needs root (slurmd and munged run as system daemons)" >&2
    exit 2
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case "${1:-}" in
  install)
    if command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
      exit 0
    fi
    need_root
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y slurm-wlm munge >/dev/null 2>&1 \
      || { apt-get update >/dev/null && apt-get install -y slurm-wlm munge >/dev/null; }
    ;;
  start)
    need_root
    dir=$(realpath "${2:?usage: slurm-cluster.sh start DIR}")
    mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
    # munge: a key of our own and a socket in DIR, so a munged of the machine is not touched.
    chown munge:munge "$dir/munge"
    chmod 755 "$dir/munge"
    if [ ! -f "$dir/munge/munge.key" ]; then
      dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
      chown munge:munge "$dir/munge/munge.key"
      chmod 400 "$dir/munge/munge.key"
    fi
    runuser -u munge -- munged \
      --socket="$dir/munge/munge.socket" \
      --key-file="$dir/munge/munge.key" \
      --pid-file="$dir/munge/munged.pid" \
      --log-file="$dir/munge/munged.log" \
      --seed-file="$dir/munge/munged.seed"
    host=$(hostname -s)
    memory=$(awk '/MemTotal/ { print int($2 / 1024 / 2) }' /proc/meminfo)
    cat > "$dir/slurm.conf" <<EOF
ClusterName=cosmos-test
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=5
NodeName=$host CPUs=$(nproc) RealMemory=$memory State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    for _ in $(seq 1 120); do
      if sinfo -h -o '%T' 2>/dev/null | grep -q idle; then
        echo "$SLURM_CONF"
        exit 0
      fi
      sleep 0.5
    done
    echo "slurm-cluster: the node did not become idle within 60 s; logs in $dir" >&2
    exit 1
    ;;
  stop)
    dir=$(realpath "${2:?usage: slurm-cluster.sh stop DIR}")
    for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
      if [ -f "$pid_file" ]; then
        kill "$(cat "$pid_file")" 2>/dev/null || true
      fi
    done
    ;;
  *)
    echo "usage: slurm-cluster.sh install | start DIR | stop DIR" >&2
    exit 64
    ;;
esac
