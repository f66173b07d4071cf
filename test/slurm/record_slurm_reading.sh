#!/usr/bin/env bash
# Records how the real Slurm (Debian 12's 22.05) reads every batch script of
# test/slurm/corpus: each is submitted held (`sbatch --hold`) to a private
# Slurm of 4 nodes whose partitions, node features and GPU types are those
# the corpus names, and `scontrol show job` is written to
# test/slurm/corpus/slurm_reading.tsv. Names a script uses that no Slurm
# could hold (placeholders such as <PARTITION>) are overridden on sbatch's
# command line, and the override is recorded. Issue 25's tests compare
# Muster's reading of the corpus with this file.
#
# Needs: apt-get install slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
# Usage: test/slurm/record_slurm_reading.sh [BASE dir, default /tmp/muster-slurm-reading]
set -euo pipefail
cd "$(dirname "$0")/../.."
BASE=${1:-/tmp/muster-slurm-reading}
CORPUS=test/slurm/corpus
OUT=$CORPUS/slurm_reading.tsv
HOST=$(hostname -s)
PORT=${CTLD_PORT:-16917}
NODE_PORT0=${SLURMD_PORT0:-17100}

for cmd in sbatch scontrol slurmctld slurmd munged; do
  command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || { echo "needs $cmd (see the header)" >&2; exit 2; }
done

stop() {
  for f in "$BASE"/run/slurmd.*.pid "$BASE"/run/slurmctld.pid "$BASE"/run/munged.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  for f in "$BASE"/run/*.pid; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
}
trap stop EXIT
rm -rf "$BASE"
mkdir -p "$BASE"/{etc,state,spool,run,log,munge,dev}

dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1 count=1024 status=none
chmod 600 "$BASE/munge/munge.key"; chmod 700 "$BASE/munge"
/usr/sbin/munged --force --key-file="$BASE/munge/munge.key" --socket="$BASE/munge/munge.sock" \
  --pid-file="$BASE/run/munged.pid" --log-file="$BASE/log/munged.log" --seed-file="$BASE/munge/munged.seed"
sleep 0.5; chmod 755 "$BASE/munge"

# The corpus's partitions and features; GPUs typed a100 on two nodes and
# l40s on two (scripts ask for both by type).
PARTITIONS="train hopper-prod llmc your-partition main batch xyz-cluster gpu_p5 production-cluster small-g g40423 dev standard-g"
FEATURES="a100,gpu80,v100-16g,volta32gb"
for g in 0 1 2 3 4 5 6 7; do ln -sf /dev/null "$BASE/dev/gpu$g"; done
{
  cat <<CONF
ClusterName=reading
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
AuthInfo=socket=$BASE/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/slurmd.%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
DefMemPerCPU=1000
MaxArraySize=100001
NodeName=n[001-002] NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[$((NODE_PORT0+1))-$((NODE_PORT0+2))] CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=64 ThreadsPerCore=1 RealMemory=2000000 Gres=gpu:a100:8 Feature=$FEATURES State=UNKNOWN
NodeName=n[003-004] NodeHostname=$HOST NodeAddr=127.0.0.1 Port=[$((NODE_PORT0+3))-$((NODE_PORT0+4))] CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=64 ThreadsPerCore=1 RealMemory=2000000 Gres=gpu:l40s:8 Feature=$FEATURES State=UNKNOWN
PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  for p in $PARTITIONS; do echo "PartitionName=$p Nodes=ALL MaxTime=INFINITE State=UP"; done
} > "$BASE/etc/slurm.conf"
cat > "$BASE/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=n[001-002] Name=gpu Type=a100 File=$BASE/dev/gpu[0-7]
NodeName=n[003-004] Name=gpu Type=l40s File=$BASE/dev/gpu[0-7]
CONF
printf "CgroupPlugin=cgroup/v1\n" > "$BASE/etc/cgroup.conf"
export SLURM_CONF=$BASE/etc/slurm.conf

/usr/sbin/slurmctld -i -f "$SLURM_CONF"
for _ in $(seq 50); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
for i in 1 2 3 4; do
  n=$(printf 'n%03d' "$i"); mkdir -p "$BASE/spool/slurmd.$n"; /usr/sbin/slurmd -f "$SLURM_CONF" -N "$n"
done
for _ in $(seq 100); do [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -ge 4 ] && break; sleep 0.2; done

FIELDS="NumNodes NumTasks CPUs/Task NtasksPerN:B:S:C MinMemoryNode MinMemoryCPU TresPerNode TresPerTask TresPerJob TresPerSocket MemPerTres CpusPerTres ArrayTaskId ArrayTaskThrottle Features OverSubscribe Partition QOS Account TimeLimit JobName StdOut StdErr WorkDir Requeue Dependency Reservation"
# Prints job ID's fields (tab before each, newline after) and cancels it.
reading() {
  local line v f
  line=$(scontrol show job -o "$1" | head -1)
  for f in $FIELDS; do
    # The value runs to the next " Key=" (values may hold spaces: JobName=my job).
    v=$(printf ' %s\n' "$line" | sed -nE "s|.* $f=||; T; s| [A-Za-z][A-Za-z0-9/:_]*=.*||; s| +$||; p")
    printf '\t%s' "$v"
  done
  printf '\n'
  scancel "$1" 2>/dev/null || true
}
# Sets `override` to what sbatch's command line must clear or replace in
# script $1: placeholders and site names no Slurm here can hold.
overrides() {
  override=()
  if grep -Eq '^#SBATCH.*(--partition|-p)[= ]*<' "$1"; then override+=(--partition=gpu); fi
  if grep -Eq '^#SBATCH.*--reservation' "$1"; then override+=(--reservation=); fi
  if grep -Eq '^#SBATCH.*(--exclude|-x)[= ]' "$1"; then override+=(--exclude=); fi
}
{
  printf 'file\toverride\tverdict'; for f in $FIELDS; do printf '\t%s' "$f"; done; printf '\n'
  for script in "$CORPUS"/scripts/*.sh; do
    name=$(basename "$script")
    overrides "$script"
    out=$(cd "$BASE" && sbatch --hold --parsable "${override[@]}" "$OLDPWD/$script" 2>&1) || true
    id=$(printf '%s\n' "$out" | tail -1)
    if ! [[ $id =~ ^[0-9]+$ ]]; then
      printf '%s\t%s\t%s\n' "$name" "${override[*]:-}" "refused: $(printf '%s' "$out" | tr '\t\n' '  ')"
      continue
    fi
    printf '%s\t%s\taccepted' "$name" "${override[*]:-}"
    reading "$id"
  done
} > "$OUT"
echo "wrote $OUT ($(($(wc -l < "$OUT") - 1)) scripts)"

# Where Slurm would start each script now, on the 4 idle nodes: the
# select plugin's own answer (sbatch --test-only), nodes and CPUs in all.
# A job of more nodes than these 4 does not fit and says so.
ALLOC_OUT=$CORPUS/slurm_allocation.tsv
{
  printf 'file\tverdict\tnodes\tcpus\tnodelist\n'
  for script in "$CORPUS"/scripts/*.sh; do
    name=$(basename "$script")
    overrides "$script"
    out=$(cd "$BASE" && sbatch --test-only "${override[@]}" "$OLDPWD/$script" 2>&1) || true
    if [[ $out =~ using\ ([0-9]+)\ processors\ on\ nodes\ ([^ ]+) ]]; then
      list=${BASH_REMATCH[2]}
      printf '%s\tfits\t%s\t%s\t%s\n' "$name" "$(scontrol show hostnames "$list" | wc -l)" "${BASH_REMATCH[1]}" "$list"
    else
      printf '%s\t%s\t\t\t\n' "$name" "$(printf '%s' "$out" | tr '\t\n' '  ' | sed 's/ *$//')"
    fi
  done
} > "$ALLOC_OUT"
echo "wrote $ALLOC_OUT"

# How sbatch reads single directives: abbreviations, short forms, units,
# optional arguments, several options on one line, quoting and comments.
PROBES=test/slurm/option_probes.txt
PROBE_OUT=test/slurm/option_probes.tsv
{
  printf 'directive\tverdict'; for f in $FIELDS; do printf '\t%s' "$f"; done; printf '\n'
  while IFS= read -r probe; do
    case $probe in ''|'# '*) continue;; esac
    printf '#!/bin/bash\n%s\nhostname\n' "$probe" > "$BASE/probe.sh"
    out=$(cd "$BASE" && sbatch --hold --parsable probe.sh 2>&1) || true
    id=$(printf '%s\n' "$out" | tail -1)
    if ! [[ $id =~ ^[0-9]+$ ]]; then
      printf '%s\t%s\n' "$probe" "refused: $(printf '%s' "$out" | tr '\t\n' '  ')"
      continue
    fi
    printf '%s\taccepted' "$probe"
    reading "$id"
  done < "$PROBES"
} > "$PROBE_OUT"
echo "wrote $PROBE_OUT ($(($(wc -l < "$PROBE_OUT") - 1)) directives)"
