# Shared by the bench/sim_*.sh scripts (sourced with their arguments):
# the muster binary and the traces (arguments 1 and 2), the two traces
# docs/simulation.md reports, and a table's Markdown heading.
M=${1:-build/cmd/muster/muster}
T=${2:-../shared/traces}
itp=$T/microsoft-itp-elasticflow/normalized/cluster04.csv
philly=$T/philly-pollux/normalized.csv

# Prints "#### TITLE" and, in a code block, the command that made the table.
heading() {  # title, command
  printf '\n#### %s\n\n```\n%s\n```\n\n' "$1" "$2"
}
