#!/usr/bin/env bash
# A throwaway PostgreSQL server for trying Muster's HA mode and for the
# benchmarks, from Debian's postgresql-15 (scripts/install-deps.sh). Not for
# production: trust authentication on 127.0.0.1.
#
#   scripts/pg-local.sh start DIR [PORT]   initdb in DIR (once), start on PORT
#                                          (default 5433), create database
#                                          "muster"; prints its store URL
#   scripts/pg-local.sh stop DIR           stop it
#
# As root, PostgreSQL runs as the unprivileged "postgres" user.
set -euo pipefail
cmd=${1:?usage: pg-local.sh start|stop DIR [PORT]}
dir=${2:?usage: pg-local.sh start|stop DIR [PORT]}
port=${3:-5433}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed: run scripts/install-deps.sh" >&2; exit 1; }
as=()
if [ "$(id -u)" -eq 0 ]; then as=(runuser -u postgres --); fi
case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      "${as[@]}" "$bin/initdb" -D "$dir/data" -U muster --auth=trust -E UTF8 --locale=C >/dev/null
    fi
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null
    psql -X -q "postgresql://muster@127.0.0.1:$port/postgres" -c "CREATE DATABASE muster" 2>/dev/null || true
    echo "postgres://muster@127.0.0.1:$port/muster"
    ;;
  stop)
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
    ;;
  *) echo "usage: pg-local.sh start|stop DIR [PORT]" >&2; exit 2 ;;
esac
