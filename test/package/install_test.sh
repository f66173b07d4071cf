#!/usr/bin/env bash
# Installs the packages scripts/package.sh built (build-deb/), checks what
# they put where, starts the server and an agent by their units' own
# command lines (under systemd where it runs as PID 1; else as the units
# say: the server as user muster, each with a NOTIFY_SOCKET this script
# reads), runs a job, reloads the server, stops both, and purges the
# packages, checking that purge leaves nothing behind. As root; it changes
# the machine (a user, /etc/muster, /var/lib/muster) and undoes it.
#
#   scripts/package.sh && test/package/install_test.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "install_test: needs root (it installs packages)"; exit 1; }
debs=(build-deb/muster_*.deb build-deb/muster-server_*.deb build-deb/muster-agent_*.deb)
for d in "${debs[@]}"; do [ -f "$d" ] || { echo "install_test: no $d; run scripts/package.sh first"; exit 1; }; done
work=$(mktemp -d)
pids=()
passed=0
failed=0
check() {  # check "what" command...
  local what=$1; shift
  if "$@" >"$work/check.out" 2>&1; then passed=$((passed + 1)); echo "ok: $what"
  else failed=$((failed + 1)); echo "FAILED: $what"; sed 's/^/  | /' "$work/check.out" | tail -20; fi
}
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq muster muster-server muster-agent >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${debs[@]/#/./}" >/dev/null
unit_dir=/lib/systemd/system
check "the binary is installed and runs" /usr/bin/muster --version
check "man pages for muster and its commands" man -w muster muster-submit muster-get muster-agent
check "man pages read without warnings" bash -c '! MANWIDTH=80 man --warnings -l $(man -w muster-submit) 2>&1 >/dev/null | grep .'
check "bash completion completes commands" bash -c \
  'source /usr/share/bash-completion/completions/muster; COMP_WORDS=(muster sub); COMP_CWORD=1; _muster; [ "${COMPREPLY[*]}" = submit ]'
check "Debian's python3 imports the client and the in-job helpers" /usr/bin/python3 -c 'import muster, muster_job'
check "the server's system user" getent passwd muster
check "the server's configuration is readable by its group only" \
  bash -c '[ "$(stat -c %a:%G /etc/muster/server.yaml)" = 640:muster ]'
check "the agent's configuration is a conffile" bash -c 'dpkg-query -W -f="\${Conffiles}" muster-agent | grep -q /etc/muster/agent.yaml'
check "the units pass systemd-analyze verify" systemd-analyze verify "$unit_dir/muster-server.service" "$unit_dir/muster-agent.service"
check "the agent's unit delegates its cgroup and kills only the agent on stop" \
  bash -c "grep -qx Delegate=yes $unit_dir/muster-agent.service && grep -qx KillMode=process $unit_dir/muster-agent.service"

# A unit's value for KEY (the last one given).
unit_value() { sed -n "s/^$2=//p" "$unit_dir/$1" | tail -1; }
# A listener on a notify socket, printing each datagram on a line of its own.
notify_listener() {
  /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    print(s.recv(4096).decode().replace("\n", " "), flush=True)
' "$1" >"$2" &
  pids+=($!)
  for _ in $(seq 50); do [ -S "$1" ] && return; sleep 0.1; done
}
wait_for() {  # wait_for SECONDS command...: true once the command succeeds
  local until=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $until ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

node=$(hostname)
export MUSTER_SERVER=http://127.0.0.1:8470
# The first admin's token, made in the store as the server's user (no
# munge here), as docs/install.md says.
admin_token() {
  setpriv --reuid=muster --regid=muster --init-groups /usr/bin/muster token create --store /var/lib/muster/muster.db \
    --user root --expires never
}
if [ -d /run/systemd/system ]; then
  echo "install_test: systemd is PID 1: the units run under it"
  check "the server unit is active (Type=notify: it said READY)" wait_for 30 systemctl is-active muster-server
  MUSTER_TOKEN=$(admin_token)
else
  echo "install_test: no systemd here: starting the units' own command lines as they say"
  # What systemd would do first: the StateDirectory of each, owned by User=.
  server_user=$(unit_value muster-server.service User)
  install -d -m 700 -o "$server_user" -g "$(unit_value muster-server.service Group)" /var/lib/muster
  install -d -m 700 /var/lib/muster-agent
  MUSTER_TOKEN=$(admin_token)
  chmod 711 "$work"  # the server's user reaches its notify socket
  notify_listener "$work/server.notify" "$work/server.notified"
  chmod 666 "$work/server.notify"
  read -r -a server_cmd <<<"$(unit_value muster-server.service ExecStart)"
  (cd / && NOTIFY_SOCKET=$work/server.notify exec setpriv --reuid="$server_user" --regid="$server_user" --init-groups \
     "${server_cmd[@]}" >"$work/server.log" 2>&1) &
  server_pid=$!
  pids+=($server_pid)
  check "the server says READY=1 once it serves" wait_for 30 grep -q 'READY=1' "$work/server.notified"
fi
export MUSTER_TOKEN
check "the server answers" wait_for 10 curl -sf "$MUSTER_SERVER/healthz"
check "the admin token made in the store works against the server" /usr/bin/muster whoami
/usr/bin/muster token create --node "$node" >/etc/muster/node.token 2>/dev/null
chmod 600 /etc/muster/node.token
# Jobs run as their user, never root by default: submit as an ordinary one.
user_token=$(/usr/bin/muster token create --user nobody 2>/dev/null)

if [ -d /run/systemd/system ]; then
  systemctl start muster-agent
  check "the agent unit is active (it said READY)" wait_for 30 systemctl is-active muster-agent
  agent_pid=$(systemctl show -p MainPID --value muster-agent)
else
  notify_listener "$work/agent.notify" "$work/agent.notified"
  read -r -a agent_cmd <<<"$(unit_value muster-agent.service ExecStart)"
  (cd / && NOTIFY_SOCKET=$work/agent.notify exec "${agent_cmd[@]}" >"$work/agent.log" 2>&1) &
  agent_pid=$!
  pids+=($agent_pid)
  check "the agent says READY=1 once its node is known" wait_for 30 grep -q 'READY=1' "$work/agent.notified"
fi
check "the agent's node joins" wait_for 30 bash -c "/usr/bin/muster get nodes | grep -q '$node'"
job=$(MUSTER_TOKEN=$user_token /usr/bin/muster submit --name package-test -- /bin/sh -c 'echo hello from the package; sleep 3' |
      sed -n 's/^Submitted job \([0-9]*\)$/\1/p' || true)
check "a job is accepted" test -n "$job"
# While it runs: its task's group is below the agent's own (cgroup-root: self).
own_group() {  # the agent's group in the hierarchy its driver uses
  local v2 v1
  v2=$(sed -n 's/^0:://p' "/proc/$agent_pid/cgroup")
  v1=$(sed -n 's/^[0-9]*:memory://p' "/proc/$agent_pid/cgroup")
  if [ -n "$v1" ]; then echo "/sys/fs/cgroup/memory${v1}"; else echo "/sys/fs/cgroup${v2%/agent}"; fi
}
task_group() { ls -d "$(own_group)/jobs/$node".*/"j$job".*; }
group_shown() { wait_for 30 task_group || { echo "no j$job.* below $(own_group)/jobs:"; find "$(own_group)" -maxdepth 3 -type d; head -5 "$work/agent.log"; false; }; }
check "the job's task runs in a group below the agent's own (cgroup-root: self)" group_shown
check "the job runs to completion" wait_for 60 bash -c "/usr/bin/muster describe job $job -o json | grep -q '\"state\": *\"COMPLETED\"'"
check "its output is in its log" bash -c "/usr/bin/muster logs $job | grep -qx 'hello from the package'"

if [ ! -d /run/systemd/system ]; then
  reload=$(unit_value muster-server.service ExecReload)
  ${reload//\$MAINPID/$server_pid}
  check "a reload says RELOADING=1, then READY=1 again" \
    wait_for 10 bash -c "grep -q 'RELOADING=1' '$work/server.notified' && [ \$(grep -c 'READY=1' '$work/server.notified') -ge 2 ]"
  kill -TERM "$server_pid"
  check "a stop says STOPPING=1" wait_for 10 grep -q 'STOPPING=1' "$work/server.notified"
fi
if [ -d /run/systemd/system ]; then
  systemctl stop muster-agent muster-server
  check "the units stop" bash -c '! systemctl is-active -q muster-server && ! systemctl is-active -q muster-agent'
fi
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
pids=()
rm -f /etc/muster/node.token  # made by the admin, not by the packages
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq muster muster-server muster-agent >/dev/null
check "purge removes the state, the configuration and the user" \
  bash -c '[ ! -e /var/lib/muster ] && [ ! -e /var/lib/muster-agent ] && [ ! -e /var/lib/muster-agent.slurm-bin ] && [ ! -e /etc/muster/server.yaml ] && ! getent passwd muster'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
