# Sourced by the HTTP tests: the three dcl servers as real processes on a throwaway database
# made from the test template (tests/run), each with its HTTP/JSON listener on a free port, the
# occupancy server's relaying the other two services and serving the console; the demo
# organization with one token per role, and the demo inventory loaded through InventoryService
# (deploy/local/demo.inventory, ids in $suite_dir/demo.env). Everything is stopped and the
# database dropped on exit.
#   start_suite [console_dir]      sets HTTP_URL, HTTP_RESERVATION_URL, HTTP_MOVES_URL,
#                                  TOKEN_<role>, DCL_DEMO_*, SUITE_OWNER_URL, suite_dir and
#                                  suite_pids (reservation, moves, occupancy)
# DCL_SUITE_MOVES_FLAGS: extra flags of the moves server (e.g. its stream limits).
set -euo pipefail

runfiles=${RUNFILES_DIR:-$PWD/..}/${TEST_WORKSPACE:-__main__}
[ -d "$runfiles" ] || runfiles=$PWD
bin() { echo "$runfiles/$1"; }
psql=/usr/lib/postgresql/15/bin/psql
suite_pids=()
suite_db=""

stop_suite() {
  for pid in "${suite_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${suite_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$suite_db" ]; then
    $psql "$DCL_TEST_CONNINFO dbname=postgres" -qc "DROP DATABASE IF EXISTS $suite_db WITH (FORCE)" \
      >/dev/null 2>&1 || true
  fi
}

# Waits until a server logs its port (gRPC: "serving on port N", HTTP: "http on port N").
wait_for_log() {
  local log=$1 pattern=$2
  for _ in $(seq 1 300); do
    grep -q "$pattern" "$log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "suite: '$pattern' never appeared in $log:" >&2
  cat "$log" >&2
  return 1
}

start_suite() {
  local console_dir=${1:-}
  : "${DCL_TEST_CONNINFO:?run through tests/run (a PostgreSQL and the template database)}"
  suite_dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/http-suite.XXXXXX")
  suite_db="http_$(date +%s%N | tail -c 10)_$$"
  trap stop_suite EXIT
  $psql "$DCL_TEST_CONNINFO dbname=postgres" -qc \
    "CREATE DATABASE $suite_db TEMPLATE ${DCL_TEST_TEMPLATE:-dcl_template}" >/dev/null
  local owner_url="$DCL_TEST_CONNINFO dbname=$suite_db"
  export SUITE_OWNER_URL="$owner_url"
  local service_url
  service_url="$(echo "$DCL_TEST_CONNINFO" | sed 's/user=[^ ]*//') user=${DCL_TEST_SERVICE_ROLE:-dcl_service} dbname=$suite_db"
  local dclctl
  dclctl=$(bin dclctl/dclctl)
  DCL_DATABASE_URL="$owner_url" "$dclctl" org create --name demo >/dev/null
  DCL_DATABASE_URL="$owner_url" "$dclctl" module enable >/dev/null
  DCL_DATABASE_URL="$owner_url" "$dclctl" module enable --org demo >/dev/null
  for role in commerce dc-operator customer admin; do
    local token
    token=$(DCL_DATABASE_URL="$owner_url" "$dclctl" token create --org demo --role "$role" \
      --subject demo-customer --label "http test" | sed -n 's/^token: *//p')
    export "TOKEN_${role//-/_}=$token"
  done

  local free_port ports=()
  free_port=$(bin deploy/free-port)
  for _ in 1 2 3 4 5 6; do ports+=("$("$free_port")"); done
  "$(bin services/reservation/reservation_server)" --listen=127.0.0.1:${ports[0]} \
    --http_listen=127.0.0.1:${ports[3]} --database_url="$service_url" \
    >"$suite_dir/reservation.log" 2>&1 &
  suite_pids+=($!)
  "$(bin services/moves/moves_server)" --listen=127.0.0.1:${ports[2]} \
    --http_listen=127.0.0.1:${ports[5]} --database_url="$service_url" \
    ${DCL_SUITE_MOVES_FLAGS:-} >"$suite_dir/moves.log" 2>&1 &
  suite_pids+=($!)
  "$(bin services/occupancy/occupancy_server)" --listen=127.0.0.1:${ports[1]} \
    --http_listen=127.0.0.1:${ports[4]} ${console_dir:+--console_dir="$console_dir"} \
    --http_upstream=dcl.v1.ReservationService=127.0.0.1:${ports[0]},dcl.v1.MoveService=127.0.0.1:${ports[2]} \
    --database_url="$service_url" >"$suite_dir/occupancy.log" 2>&1 &
  suite_pids+=($!)
  for name in reservation moves occupancy; do
    wait_for_log "$suite_dir/$name.log" "http on port"
  done
  export HTTP_URL="http://127.0.0.1:${ports[4]}"
  export HTTP_RESERVATION_URL="http://127.0.0.1:${ports[3]}"
  export HTTP_MOVES_URL="http://127.0.0.1:${ports[5]}"
  "$(bin deploy/local/seed_demo)" --target "127.0.0.1:${ports[1]}" --token "$TOKEN_dc_operator" \
    --file "$(bin deploy/local/demo.inventory)" --env_out "$suite_dir/demo.env" >/dev/null
  set -a
  # shellcheck disable=SC1091
  . "$suite_dir/demo.env"
  set +a
}
