#!/bin/sh
# The simulator and the server run one lifecycle: a scenario (a trace, a
# cluster, node failures) replayed by `muster sim` and by a real server with
# played agents (muster_fleet_scenario) gives both the expected stories:
# each job's events, attempts and final state (src/sim/job_story.h).
#
# Usage: sim_server_parity.sh MUSTER FLEET_SCENARIO SCENARIO_DIR
#   SCENARIO_DIR holds trace.csv, flags (the flags both take) and
#   stories.txt (expected). MUSTER_REWRITE=1 rewrites stories.txt from the
#   simulator's (then check the server against it and review the diff).
set -eu
muster=$1 replay=$2 dir=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=$(cat "$dir/flags")
# The simulator's model of lost work (checkpoints, restart cost) is its
# own: off, as the server measures no such thing.
# shellcheck disable=SC2086
"$muster" sim "$dir/trace.csv" $flags --checkpoint-interval 0s --restart-cost 0s --stories "$out/sim.txt" >/dev/null
if [ "${MUSTER_REWRITE:-}" = 1 ]; then cp "$out/sim.txt" "$dir/stories.txt"; fi
# shellcheck disable=SC2086
"$replay" --muster "$muster" "$dir/trace.csv" $flags --stories "$out/server.txt"
status=0
diff -u "$dir/stories.txt" "$out/sim.txt" || { echo "the simulator's stories differ from $dir/stories.txt"; status=1; }
diff -u "$dir/stories.txt" "$out/server.txt" || { echo "the server's stories differ from $dir/stories.txt"; status=1; }
[ $status = 0 ] && echo "simulator and server: the same stories ($(grep -c '^job ' "$dir/stories.txt") jobs)"
exit $status
