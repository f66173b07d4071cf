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
# the queue); 60 s at most.
wait_state() {
  for _ in $(seq 600); do
    [ "$(squeue -h -j "$1" -o %t 2>/dev/null)" = "$2" ] && return 0
    sleep 0.1
  done
  echo "job $1 never reached \"$2\"" >&2
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
echo "$env_job $long $after $array" > ids.txt
