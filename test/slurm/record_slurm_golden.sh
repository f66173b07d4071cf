#!/usr/bin/env bash
# Records the real Slurm's answers to golden/scenario.sh (Debian 12's Slurm
# 22.05): a private cluster of two nodes (4 CPUs, 4 GPUs each) with
# accounting (slurmdbd on a private MariaDB, for sacct) runs the scenario,
# and its outputs go to test/slurm/golden/slurm/. The slurm_test golden
# test runs the same scenario on Muster and compares the two, field by
# field (golden/README.md).
#
# Needs: apt-get install slurmctld slurmd slurm-client slurmdbd
#        slurm-wlm-basic-plugins munge mariadb-server
# Usage: test/slurm/record_slurm_golden.sh [BASE dir, default /tmp/muster-slurm-golden]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BASE=${1:-/tmp/muster-slurm-golden}
OUT=$ROOT/test/slurm/golden/slurm
HOST=$(hostname -s)
PORT=${CTLD_PORT:-16930}
DBD_PORT=$((PORT + 1))
DB_PORT=$((PORT + 2))
NODE_PORT0=${SLURMD_PORT0:-17130}

for cmd in sbatch squeue sacct sacctmgr scontrol srun slurmctld slurmd slurmdbd munged mariadbd mariadb-install-db; do
  command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || { echo "needs $cmd (see the header)" >&2; exit 2; }
done

stop() {
  for f in "$BASE"/run/slurmd.*.pid "$BASE"/run/slurmctld.pid "$BASE"/run/slurmdbd.pid "$BASE"/run/mariadb.pid \
           "$BASE"/run/munged.pid; do
    [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 2
  for f in "$BASE"/run/*.pid; do [ -s "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
}
trap stop EXIT
rm -rf "$BASE"
mkdir -p "$BASE"/{etc,state,spool,run,log,munge,dev,db}

dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1 count=1024 status=none
chmod 600 "$BASE/munge/munge.key"; chmod 700 "$BASE/munge"
/usr/sbin/munged --force --key-file="$BASE/munge/munge.key" --socket="$BASE/munge/munge.sock" \
  --pid-file="$BASE/run/munged.pid" --log-file="$BASE/log/munged.log" --seed-file="$BASE/munge/munged.seed"
sleep 0.5; chmod 755 "$BASE/munge"

# MariaDB for slurmdbd, on its own directory and port.
mariadb-install-db --user=root --datadir="$BASE/db" --auth-root-authentication-method=normal >"$BASE/log/db-install.log" 2>&1
mariadbd --user=root --datadir="$BASE/db" --socket="$BASE/run/mariadb.sock" --port="$DB_PORT" \
  --bind-address=127.0.0.1 --pid-file="$BASE/run/mariadb.pid" --log-error="$BASE/log/mariadb.log" &
for _ in $(seq 100); do [ -S "$BASE/run/mariadb.sock" ] && break; sleep 0.2; done
mariadb --socket="$BASE/run/mariadb.sock" -uroot -e \
  "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"

cat > "$BASE/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$BASE/munge/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$BASE/run/slurmdbd.pid
LogFile=$BASE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_golden
CONF
chmod 600 "$BASE/etc/slurmdbd.conf"
# slurmdbd reads slurmdbd.conf beside $SLURM_CONF.
export SLURM_CONF=$BASE/etc/slurm.conf
/usr/sbin/slurmdbd -D >>"$BASE/log/slurmdbd.log" 2>&1 &
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT) 2>/dev/null && break; sleep 0.2; done
(exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT) 2>/dev/null || { echo "slurmdbd did not start: $BASE/log/slurmdbd.log" >&2; exit 1; }

for g in 0 1 2 3; do ln -sf /dev/null "$BASE/dev/gpu$g"; done
cat > "$BASE/etc/slurm.conf" <<CONF
ClusterName=golden
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
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$BASE/munge/munge.sock
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=300
KillWait=2
DefMemPerCPU=100
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((NODE_PORT0+1)) CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:4 Features=fa State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((NODE_PORT0+2)) CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=4000 Gres=gpu:4 Features=fb State=UNKNOWN
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
cat > "$BASE/etc/gres.conf" <<CONF
AutoDetect=off
NodeName=n[1-2] Name=gpu File=$BASE/dev/gpu[0-3]
CONF
printf "CgroupPlugin=cgroup/v1\n" > "$BASE/etc/cgroup.conf"
sacctmgr -i add cluster golden >/dev/null
sacctmgr -i add account golden Cluster=golden >/dev/null
sacctmgr -i add user "$(id -un)" Account=golden Cluster=golden >/dev/null

/usr/sbin/slurmctld -i -f "$SLURM_CONF"
for _ in $(seq 50); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping | grep -q UP || { echo "slurmctld did not start: $BASE/log/slurmctld.log" >&2; exit 1; }
for n in n1 n2; do mkdir -p "$BASE/spool/slurmd.$n"; /usr/sbin/slurmd -f "$SLURM_CONF" -N "$n"; done
for _ in $(seq 100); do [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -ge 2 ] && break; sleep 0.2; done
[ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -ge 2 ] || { echo "the nodes did not come up: $BASE/log" >&2; exit 1; }

rm -rf "$OUT"
work=$BASE/run-out
test/slurm/golden/scenario.sh "$work"
mkdir -p "$OUT"
for f in sbatch-parsable.txt batch-env.txt hostnames.txt show-job.txt srun-env.txt srun-exit.txt env.out \
         squeue.txt squeue-array.txt sacct.txt ids.txt reservation.txt show-reservation.txt squeue-dep.txt \
         scancel.out limit.out sacct-more.txt sacct-choice.txt; do
  cp "$work/$f" "$OUT/$f"
done
# Where the recording ran, for the comparison's normalizing.
{
  echo "host $HOST"
  echo "dir $work"
  echo "user $(id -un)"
  echo "uid $(id -u)"
  echo "gid $(id -g)"
} > "$OUT/context.txt"
echo "wrote $OUT"
