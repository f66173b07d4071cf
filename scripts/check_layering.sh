#!/usr/bin/env bash
# Checks the include direction of src/ (common <- core <- scheduler, lifecycle <- sim/server <- cli;
# config, api and store beside the scheduler, never including it; the agent
# (gpu, agent) shares only common, the agent protocol (proto) and HTTP (http) with the server;
# the job-side channels (shell, step) only common, auth and each other),
# and that the scheduling core (core/, scheduler/) does no I/O and reads no clock.
# Prints each violation as file:line and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
fail=0
violation() { echo "layering: $1"; fail=1; }

# Project includes each layer may use.
declare -A allowed=(
  [common]="common"
  [core]="common core"
  [scheduler]="common core scheduler"
  [lifecycle]="common core lifecycle"
  [config]="common core config"
  [api]="common core api"
  [store]="common store"
  [sim]="common core scheduler lifecycle config sim"
  [proto]="common proto"
  [http]="common http"
  [gpu]="common gpu"
  [checkpoint]="common checkpoint"
  [auth]="common auth"
  [shell]="common shell"
  [step]="common auth shell step"
  [agent]="common gpu proto checkpoint http auth agent"
  [server]="common core scheduler lifecycle config api store proto checkpoint http auth server"
  [cli]="common core scheduler lifecycle config api sim server gpu proto checkpoint agent http auth store shell step cli"
)
for layer in "${!allowed[@]}"; do
  [ -d "src/$layer" ] || continue
  while IFS= read -r hit; do
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}
    inc=$(sed -E 's/.*#include "([^/"]+)\/.*/\1/' <<<"$rest")
    case " ${allowed[$layer]} " in
      *" $inc "*) ;;
      *) violation "$file:$line includes \"$inc/...\" (src/$layer may use: ${allowed[$layer]})";;
    esac
  done < <(grep -nE '^#include "[^"]+/' -r "src/$layer" --include='*.h' --include='*.cc' | grep -v '_test\.cc:')
done

# The scheduling core and the lifecycle: no I/O, threads, wall clock or randomness of their own.
forbidden='<(fstream|iostream|cstdio|stdio\.h|filesystem|thread|mutex|chrono|ctime|time\.h|random|unistd\.h|sys/[a-z_]+\.h|sqlite3\.h|libpq-fe\.h|httplib\.h)>'
while IFS= read -r hit; do
  violation "$hit: the scheduling core must not do I/O or read clocks"
done < <(grep -nE "^#include $forbidden" -r src/core src/scheduler src/lifecycle --include='*.h' --include='*.cc' | grep -v '_test\.cc:')
while IFS= read -r hit; do
  violation "$hit: the scheduling core must not call the clock or rand"
done < <(grep -nE '(system_clock|steady_clock|\btime\(|\brand\(|srand\(|random_device|getenv\()' -r src/core src/scheduler src/lifecycle --include='*.h' --include='*.cc' | grep -v '_test\.cc:')

# ASSIGN_OR_RETURN is several statements: an unbraced if/for/while would
# guard only the first of them.
while IFS= read -r hit; do
  violation "$hit: brace ASSIGN_OR_RETURN under if/for/while"
done < <(grep -nE '^\s*(if|for|while) \(.*\) ASSIGN_OR_RETURN' -r src --include='*.cc' --include='*.h')

if [ "$fail" -eq 0 ]; then echo "layering: ok"; fi
exit "$fail"
