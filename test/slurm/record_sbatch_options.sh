#!/usr/bin/env bash
# Records sbatch's (or srun's) own option table (Debian 12's Slurm 22.05)
# from the binary's answers, for issue 25's option readers and their tests:
#   CMD_options.tsv   every long option and whether it takes an argument
#                     (required, optional: only with "=", or none)
#   CMD_prefixes.tsv  every proper prefix of every option, and what the
#                     command makes of "--PREFIX": the option, or
#                     "ambiguous", as getopt_long decides
# The short letters are not probed; the man page gives them (-N, --nodes).
# No daemon is needed: getopt answers before sbatch reads its configuration's
# cluster (srun, which goes on to ask for an allocation, is killed after a
# few seconds). Usage: test/slurm/record_sbatch_options.sh [sbatch|srun]
set -euo pipefail
cmd=${1:-sbatch}
[[ $cmd == sbatch || $cmd == srun ]] || { echo "usage: $0 [sbatch|srun]" >&2; exit 2; }
cd "$(dirname "$0")"
command -v "$cmd" >/dev/null || { echo "needs $cmd (apt-get install slurm-client)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/slurm.conf" <<CONF
ClusterName=probe
SlurmctldHost=localhost(127.0.0.1)
AuthType=auth/none
CredType=cred/none
NodeName=n1 CPUs=1 State=UNKNOWN
PartitionName=p Nodes=ALL Default=YES
CONF
export SLURM_CONF=$tmp/slurm.conf
# The command with the options given and an empty script; never reads stdin.
probe() { timeout -s KILL 3 "$cmd" "$@" /dev/null </dev/null 2>&1 | head -1 || true; }
# The same with the option last, so that nothing follows it to be taken as
# its argument.
probe_last() { timeout -s KILL 3 "$cmd" "$@" </dev/null 2>&1 | head -1 || true; }

# Every long option: "--L" for each letter names them (ambiguous: the list;
# unique: the one option, in its "requires an argument" message or by "=").
names=()
for l in {a..z}; do
  out=$(probe "--$l=1")
  if [[ $out == *"is ambiguous; possibilities:"* ]]; then
    mapfile -t found < <(printf '%s\n' "${out#*possibilities: }" | grep -o "'--[a-z0-9-]*'" | tr -d "'" | sed 's/^--//')
    names+=("${found[@]}")
  elif [[ $out != *"unrecognized option"* ]]; then
    one=$(probe_last "--$l")
    [[ $one =~ option\ \'--([a-z0-9-]+)\' ]] && names+=("${BASH_REMATCH[1]}")
  fi
done
# A letter that begins one option only, whose argument is optional, is
# taken without a word of its name (srun's --kill-on-bad-exit, alone under
# "k"): named here, and probed like the others below.
[[ $cmd == srun ]] && names+=(kill-on-bad-exit)
mapfile -t names < <(printf '%s\n' "${names[@]}" | sort -u)

{
  printf 'option\targument\n'
  for n in "${names[@]}"; do
    if [[ $(probe_last "--$n") == *"requires an argument"* ]]; then
      arg=required
    elif [[ $(probe "--$n=x") == *"doesn't allow an argument"* ]]; then
      arg=none
    else
      arg=optional
    fi
    printf '%s\t%s\n' "$n" "$arg"
  done
} > "${cmd}_options.tsv"

{
  printf 'prefix\t%s reads\n' "$cmd"
  for n in "${names[@]}"; do
    for ((k = 1; k < ${#n}; k++)); do printf '%s\n' "${n:0:k}"; done
  done | sort -u | while read -r p; do
    # A name that is also a prefix of another (srun's --bcast): getopt
    # takes an exact name as that option.
    if printf '%s\n' "${names[@]}" | grep -qx -- "$p"; then
      printf '%s\t%s\n' "$p" "$p"
      continue
    fi
    out=$(probe "--$p=x")
    if [[ $out == *"is ambiguous"* ]]; then
      printf '%s\tambiguous\n' "$p"
    elif [[ $out =~ option\ \'--([a-z0-9-]+)\' || $out =~ Invalid\ --([a-z0-9-]+)\ specification ]]; then
      printf '%s\t%s\n' "$p" "${BASH_REMATCH[1]}"
    else
      # Accepted or refused for its value: which option took it shows with no value.
      one=$(probe_last "--$p")
      if [[ $one =~ option\ \'--([a-z0-9-]+)\' ]]; then
        printf '%s\t%s\n' "$p" "${BASH_REMATCH[1]}"
      else
        # Taken without a word of which option took it (an optional argument
        # accepted): the only option it begins.
        mapfile -t only < <(printf '%s\n' "${names[@]}" | grep "^$p")
        if [ "${#only[@]}" -eq 1 ]; then
          printf '%s\t%s\n' "$p" "${only[0]}"
        else
          printf '%s\t(took it: %s)\n' "$p" "$(printf '%s' "$out" | tr '\t' ' ')"
        fi
      fi
    fi
  done
} > "${cmd}_prefixes.tsv"
echo "wrote ${cmd}_options.tsv ($(($(wc -l < "${cmd}_options.tsv") - 1)) options), ${cmd}_prefixes.tsv ($(($(wc -l < "${cmd}_prefixes.tsv") - 1)) prefixes)"
