#!/usr/bin/env bash
# Records sbatch's own option table (Debian 12's Slurm 22.05) from the
# binary's answers, for issue 25's option reader and its tests:
#   sbatch_options.tsv   every long option and whether it takes an argument
#                        (required, optional: only with "=", or none)
#   sbatch_prefixes.tsv  every proper prefix of every option, and what
#                        sbatch makes of "--PREFIX": the option, or
#                        "ambiguous", as getopt_long decides
# The short letters are not probed; the man page gives them (-N, --nodes).
# No daemon is needed: getopt answers before sbatch reads its configuration's
# cluster. Usage: test/slurm/record_sbatch_options.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v sbatch >/dev/null || { echo "needs sbatch (apt-get install slurm-client)" >&2; exit 2; }
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
# sbatch with the options given and an empty script; never reads stdin.
probe() { timeout 5 sbatch "$@" /dev/null </dev/null 2>&1 | head -1 || true; }
# The same with the option last, so that nothing follows it to be taken as
# its argument.
probe_last() { timeout 5 sbatch "$@" </dev/null 2>&1 | head -1 || true; }

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
} > sbatch_options.tsv

{
  printf 'prefix\tsbatch reads\n'
  for n in "${names[@]}"; do
    for ((k = 1; k < ${#n}; k++)); do printf '%s\n' "${n:0:k}"; done
  done | sort -u | while read -r p; do
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
} > sbatch_prefixes.tsv
echo "wrote sbatch_options.tsv ($(($(wc -l < sbatch_options.tsv) - 1)) options), sbatch_prefixes.tsv ($(($(wc -l < sbatch_prefixes.tsv) - 1)) prefixes)"
