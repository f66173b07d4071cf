#!/usr/bin/env bash
# One run of Slurm's commands as users and their scripts use them, on
# whichever Slurm the PATH gives: the real one (record_slurm_golden.sh) or
# Muster's (the slurm_test golden test, with links to the muster binary).
# Each output goes to a file of OUT; golden_test.cc compares the two runs
# field by field. Needs a cluster of two idle nodes with 4 CPUs each.
# Usage: scenario.sh OUT
set -u
OUT=$1
mkdir -p "$OUT"
cd "$OUT"

# Waits until `squeue -h -j JOB -o %t` prints STATE ("" once it has left
# the queue); 180 s at most (a loaded CI machine).
wait_state() {
  for _ in $(seq 1800); do
    [ "$(squeue -h -j "$1" -o %t 2>/dev/null)" = "$2" ] && return 0
    sleep 0.1
  done
  echo "job $1 never reached \"$2\"" >&2
  return 1
}

# Until job $1 has a reason other than None: Slurm gives one at submit,
# Muster at its next scheduling cycle (milliseconds, more under a sanitizer).
wait_reason() {
  for _ in $(seq 1800); do
    [ "$(squeue -h -j "$1" -o %r 2>/dev/null)" != "None" ] && return 0
    sleep 0.1
  done
  echo "job $1 never had a reason" >&2
  return 1
}

# 1. A two-node batch script: its environment, srun's, the host list, a
#    failing step. (1G of memory a node: the Slurm commands inside the job
#    may be sanitizer builds of muster, which need more than 100M.)
cat > env.sbatch <<'EOF'
#!/bin/bash
#SBATCH --job-name=golden-env
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --mem=1G
#SBATCH --time=5
#SBATCH --output=env.out
env | grep '^SLURM_' | sort > batch-env.txt
scontrol show hostnames "$SLURM_JOB_NODELIST" > hostnames.txt
scontrol show job "$SLURM_JOB_ID" > show-job.txt
srun -l bash -c 'env | grep "^SLURM_" | sort' | sort -n -s -k1,1 > srun-env.txt
srun --nodes=1 --ntasks=1 -w "$(tail -n 1 hostnames.txt)" bash -c 'exit 3'
echo "srun exit $?" > srun-exit.txt
EOF
env_job=$(sbatch --parsable env.sbatch)
echo "$env_job" > sbatch-parsable.txt
wait_state "$env_job" ""

# 2. The queue: a running job, one waiting for it, and a throttled array.
cat > sleep.sbatch <<'EOF'
#!/bin/bash
#SBATCH --output=/dev/null
sleep 120
EOF
long=$(sbatch --parsable -J golden-long --nodes=2 --ntasks-per-node=4 --time=10 sleep.sbatch)
wait_state "$long" R
after=$(sbatch --parsable -J golden-after --nodes=1 --time=10 --dependency=afterok:"$long" sleep.sbatch)
array=$(sbatch --parsable -J golden-array --array=0-3%1 -c 1 --time=1 sleep.sbatch)
wait_state "$after" PD
sleep 2
squeue -h -o '%i|%j|%t|%r|%D|%C|%l' > squeue.txt
squeue -h -r -t PD -o '%i|%K|%r' > squeue-array.txt
# The waiting jobs first: cancelled after the job they wait for, they could
# start, or fail for a dependency that can never hold, in between.
scancel "$after" "$array"
for j in "$after" "${array}_0"; do wait_state "$j" ""; done
scancel "$long"
wait_state "$long" ""
sleep 2

# 3. Accounting.
sacct -X -P -n --format=JobID,JobName,State,ExitCode,NNodes,AllocCPUS,Timelimit \
  -j "$env_job,$long,$after,$array" > sacct.txt

# 4. What admins and pipelines add: a maintenance reservation over every
#    node, a node constraint with a choice (n1 has feature fa, n2 fb: each node
#    has one of them), a
#    job that waits for a whole array, and signals to a batch script: from
#    scancel, and before its time limit from --signal.
scontrol create reservation ReservationName=golden-maint StartTime=now+1hour Duration=30 Nodes=ALL Users=root \
  Flags=MAINT,IGNORE_JOBS > reservation.txt 2>&1
scontrol show reservation golden-maint > show-reservation.txt
scontrol delete ReservationName=golden-maint >> reservation.txt 2>&1
choice=$(sbatch --parsable -J golden-choice -N2 -C 'fa|fb' --time=1 -o /dev/null --wrap true)
arr=$(sbatch --parsable -J golden-arr --array=0-1 --time=1 -o /dev/null --wrap 'sleep 4')
dep=$(sbatch --parsable -J golden-dep --dependency=afterok:"$arr" --time=1 -o /dev/null --wrap true)
wait_state "${arr}_0" R
wait_reason "$dep"
squeue -h -j "$dep" -o '%i|%E|%r' > squeue-dep.txt
cat > trap.sbatch <<'TRAP'
#!/bin/bash
#SBATCH --time=1
trap 'echo got USR1; exit 0' USR1
trap 'echo got USR2; exit 0' USR2
touch "trapped.$SLURM_JOB_ID"
sleep 100 &
wait
TRAP
sig=$(sbatch --parsable -J golden-scancel -o scancel.out trap.sbatch)
# Signalled only once its traps are set (bash starts slowly on a loaded machine).
for _ in $(seq 1800); do [ -e "trapped.$sig" ] && break; sleep 0.1; done
scancel --signal=USR1 --batch "$sig"
limit=$(sbatch --parsable -J golden-limit -o limit.out --signal=B:USR2@50 trap.sbatch)
for j in "$sig" "$limit" "$dep" "$choice"; do wait_state "$j" ""; done
sleep 2
sacct -X -P -n --format=JobID,JobName,State,ExitCode,NNodes -j "$choice,$arr,$dep,$sig,$limit" > sacct-more.txt
sacct -X -P -n --format=JobID,NodeList -j "$choice" > sacct-choice.txt
echo "$env_job $long $after $array $choice $arr $dep $sig $limit" > ids.txt
