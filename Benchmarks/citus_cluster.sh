#!/bin/bash
# A local Citus cluster and one plain server beside it, for Benchmarks/citus_commands.sh (BENCHMARKS-LOG.md, issue 42):
#   Benchmarks/citus_cluster.sh start DIR     # coordinator :5500, workers :5501 :5502, one server :5510
#   Benchmarks/citus_cluster.sh database DIR NAME   # another Citus database on the running cluster
#   Benchmarks/citus_cluster.sh stop DIR
# Needs PostgreSQL's server binaries with the citus extension installed (citus.so in `pg_config --pkglibdir`).
# Every node runs as the `postgres` OS user when started by root (initdb refuses root), listens on a Unix socket
# in DIR only, trusts local connections and has the same settings (fsync off, as the test clusters); each has a
# database `bench`, with the citus extension on the four Citus nodes and the workers added on the coordinator.
# The plain server has the same settings without Citus, so that the two sides differ only in distribution.
set -euo pipefail
action=$1 dir=$2
bin=$(pg_config --bindir)
export PGOPTIONS="-c client_min_messages=warning" # a second start finds the extension there already
as_server_user() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
nodes=(coordinator:5500 worker1:5501 worker2:5502 single:5510)

make_database() { # port, name: the database, unless the node has it
    psql -h "$dir" -p "$1" -U postgres -d postgres -Atq -c "SELECT 1 FROM pg_database WHERE datname = '$2'" |
        grep -q 1 || psql -h "$dir" -p "$1" -U postgres -d postgres -q -c "CREATE DATABASE \"$2\""
}
citus_database() { # name: the database on the three Citus nodes, with the extension, the workers added
    for port in 5500 5501 5502; do
        make_database "$port" "$1"
        psql -h "$dir" -p "$port" -U postgres -d "$1" -q -c "CREATE EXTENSION IF NOT EXISTS citus"
    done
    for port in 5501 5502; do
        psql -h "$dir" -p 5500 -U postgres -d "$1" -q -c \
            "SELECT citus_add_node('$dir', $port) WHERE NOT EXISTS (SELECT FROM pg_dist_node WHERE nodeport = $port)" \
            > /dev/null
    done
}

case $action in
start)
    mkdir -p "$dir"
    [[ $(id -u) == 0 ]] && chown postgres "$dir"
    for node in "${nodes[@]}"; do
        name=${node%%:*} port=${node##*:}
        if [[ ! -d $dir/$name ]]; then
            as_server_user "$bin/initdb" -D "$dir/$name" -U postgres -E UTF8 --locale=C --auth-local=trust \
                --no-instructions > "$dir/$name.initdb.log" 2>&1 || { cat "$dir/$name.initdb.log" >&2; exit 1; }
            {
                echo "listen_addresses = ''"
                echo "unix_socket_directories = '$dir'"
                echo "port = $port"
                echo "fsync = off"
                echo "synchronous_commit = off"
                echo "full_page_writes = off"
                echo "max_connections = 150"
                [[ $name != single ]] && echo "shared_preload_libraries = 'citus'"
            } >> "$dir/$name/postgresql.conf"
        fi
        as_server_user "$bin/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w -s start
    done
    make_database 5510 bench
    citus_database bench
    echo "Citus: host=$dir port=5500 user=postgres dbname=bench"
    echo "one server: host=$dir port=5510 user=postgres dbname=bench"
    ;;
database)
    citus_database "${3:?usage: $0 database DIR NAME}"
    echo "Citus: host=$dir port=5500 user=postgres dbname=$3"
    ;;
stop)
    for node in "${nodes[@]}"; do
        name=${node%%:*}
        [[ -d $dir/$name ]] && as_server_user "$bin/pg_ctl" -D "$dir/$name" -m fast -w -s stop || true
    done
    ;;
*)
    echo "usage: $0 start|stop DIR, or $0 database DIR NAME" >&2
    exit 2
    ;;
esac
