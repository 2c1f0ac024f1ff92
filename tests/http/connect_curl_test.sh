#!/usr/bin/env bash
# Every RPC over HTTP/JSON by the Connect protocol, checked with curl against the real servers:
# answers in protobuf's JSON mapping, the gate's refusals as Connect errors with the HTTP status
# of Connect's table and the ErrorInfo / dcl.v1.ErrorDetail details, the replay header, the
# relay to the other servers, AIP-158 page sizes, and WatchMove as a Connect server stream
# (enveloped messages, then the end-of-stream message).
set -euo pipefail
. "$(dirname "$0")/suite.sh"
# One WatchMove stream per organization, so that the limit's refusal can be shown.
export DCL_SUITE_MOVES_FLAGS=--max_watch_streams_per_org=1
start_suite

failures=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok    $what"; else echo "FAIL  $what" >&2; failures=$((failures + 1)); fi
}

# call URL TOKEN PROCEDURE JSON → $suite_dir/status, .headers, .body
call() {
  local url=$1 token=$2 procedure=$3 body=$4
  curl -sS -o "$suite_dir/body" -D "$suite_dir/headers" -w '%{http_code}' -X POST \
    "$url/$procedure" ${token:+-H "Authorization: Bearer $token"} \
    -H 'Content-Type: application/json' --data-binary "$body" >"$suite_dir/status"
}
status_is() { [ "$(cat "$suite_dir/status")" = "$1" ] || { echo "  status $(cat "$suite_dir/status"), body: $(cat "$suite_dir/body")" >&2; return 1; }; }
body_field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[int(k)] if isinstance(v,list) else v.get(k) for k in sys.argv[2].split(".")]; print("" if v is None else v)' "$suite_dir/body" "$1"; }
field_is() { local got; got=$(body_field "$1"); [ "$got" = "$2" ] || { echo "  $1 = '$got', want '$2'; body: $(cat "$suite_dir/body")" >&2; return 1; }; }
header_is() { grep -qi "^$1: $2"$'\r'"\?$" "$suite_dir/headers" || { echo "  no '$1: $2' in: $(cat "$suite_dir/headers")" >&2; return 1; }; }
no_header() { ! grep -qi "^$1:" "$suite_dir/headers"; }
# The reason of the google.rpc.ErrorInfo detail, decoded from its base64 "value" (not "debug").
info_reason() {
  python3 - "$suite_dir/body" <<'PY'
import base64, json, sys
body = json.load(open(sys.argv[1]))
for d in body.get("details", []):
    if d["type"] == "google.rpc.ErrorInfo":
        raw = base64.b64decode(d["value"] + "=" * (-len(d["value"]) % 4))
        # field 1 (reason) is the first length-delimited field of ErrorInfo
        assert raw[0] == 0x0A
        print(raw[2:2 + raw[1]].decode())
PY
}
reason_is() { local got; got=$(info_reason); [ "$got" = "$1" ] || { echo "  reason '$got', want '$1'; body: $(cat "$suite_dir/body")" >&2; return 1; }; }

op=$TOKEN_dc_operator
rack=$DCL_DEMO_RACK_FRA1_A01

call "$HTTP_URL" "$op" dcl.v1.InventoryService/ListSites '{}'
check "ListSites answers 200 with both demo sites" status_is 200
check "  the sites are in protobuf's JSON mapping" field_is sites.1.name AMS2
check "  no cookie is set" no_header Set-Cookie
check "  no CORS header without a configured origin" no_header Access-Control-Allow-Origin

call "$HTTP_URL" "wrong-token" dcl.v1.InventoryService/ListSites '{}'
check "a wrong token: 401 unauthenticated" status_is 401
check "  code unauthenticated" field_is code unauthenticated
check "  ErrorInfo reason UNAUTHENTICATED_CALLER" reason_is UNAUTHENTICATED_CALLER
check "  dcl.v1.ErrorDetail present" field_is details.1.type dcl.v1.ErrorDetail

call "$HTTP_URL" "" dcl.v1.InventoryService/ListSites '{}'
check "no token: 401" status_is 401

call "$HTTP_URL" "$TOKEN_customer" dcl.v1.ReservationService/ListReservations '{}'
check "a customer token on ListReservations (relayed): 403 permission_denied" status_is 403
check "  ErrorInfo reason ROLE_NOT_PERMITTED" reason_is ROLE_NOT_PERMITTED

call "$HTTP_URL" "$TOKEN_commerce" dcl.v1.ReservationService/ListReservations '{}'
check "a commerce token lists reservations through the relay" status_is 200

call "$HTTP_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId": "'"$rack"'", "bogus": 1}'
check "an unknown JSON field: 400 invalid_argument" status_is 400
check "  reason INVALID_INPUT" reason_is INVALID_INPUT
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId": '
check "a body that is not JSON: 400 invalid_argument" status_is 400
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId": "not-a-uuid"}'
check "a malformed id, refused by the handler: 400" status_is 400
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId": "00000000-0000-0000-0000-000000000000"}'
check "an unknown rack: 404 not_found" status_is 404
check "  reason NOT_FOUND" reason_is NOT_FOUND

place='{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_HP_0001"'","side":"SIDE_FRONT","unit":9,"requestId":"curl-place-1"}'
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice "$place"
check "PlaceDevice of a 2U server at U9: 200" status_is 200
check "  the booking is a placement" field_is kind BOOKING_PLACEMENT
check "  no replay header on the first answer" no_header dcl-replay
booking=$(body_field id)
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice "$place"
check "the same request id again: 200, the same booking" field_is id "$booking"
check "  with dcl-replay: true" header_is dcl-replay true

call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice \
  '{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_HP_0002"'","side":"SIDE_FRONT","unit":10}'
check "a second server onto U10: 400 failed_precondition" status_is 400
check "  code failed_precondition" field_is code failed_precondition
check "  reason UNIT_OCCUPIED" reason_is UNIT_OCCUPIED
check "  naming the colliding front unit 10" field_is details.1.debug.collidingSlots.0.unit 10
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlanBooking \
  '{"booking":{"rackId":"'"$rack"'","kind":"BOOKING_PLACEMENT","deviceId":"'"$DCL_DEMO_DEVICE_HP_0002"'","side":"SIDE_FRONT","firstUnit":9}}'
check "PlanBooking answers 200 with ok=false" status_is 200
check "  and the rejection names front U9 first" field_is rejection.collidingSlots.0.unit 9

call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice \
  '{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_HP_0001"'","side":"SIDE_FRONT","unit":12,"requestId":"curl-place-1"}'
check "a request id again with other parameters: 400 REQUEST_ID_REUSED" status_is 400
check "  reason REQUEST_ID_REUSED" reason_is REQUEST_ID_REUSED
call "$HTTP_URL" "$op" dcl.v1.InventoryService/CreateSite '{"name":"FRA1"}'
check "a site name that exists: 409 already_exists" status_is 409
check "  reason ALREADY_EXISTS" reason_is ALREADY_EXISTS
call "$HTTP_URL" "$TOKEN_commerce" dcl.v1.ReservationService/Reserve \
  '{"idempotencyKey":"curl-none","criteria":{"siteId":"'"$DCL_DEMO_SITE_FRA1"'","vendor":"Nobody"}}'
check "nothing eligible: 400 failed_precondition NO_CAPACITY" status_is 400
check "  reason NO_CAPACITY" reason_is NO_CAPACITY
DCL_DATABASE_URL="$SUITE_OWNER_URL" "$(bin dclctl/dclctl)" module disable --org demo >/dev/null
call "$HTTP_URL" "$op" dcl.v1.InventoryService/ListSites '{}'
check "the module switched off for the organization: 400 MODULE_DISABLED" reason_is MODULE_DISABLED
DCL_DATABASE_URL="$SUITE_OWNER_URL" "$(bin dclctl/dclctl)" module enable --org demo >/dev/null

call "$HTTP_URL" "$op" dcl.v1.InventoryService/ListDevices '{"pageSize": 100000}'
check "AIP-158: page_size above the maximum is coerced, 200" status_is 200
call "$HTTP_URL" "$op" dcl.v1.InventoryService/ListDevices '{"pageSize": -1}'
check "a negative page_size stays refused: 400" status_is 400

call "$HTTP_URL" "$op" dcl.v1.InventoryService/NoSuchThing '{}'
check "an unknown procedure: 404 unimplemented" status_is 404
check "  code unimplemented" field_is code unimplemented
code=$(curl -sS -o /dev/null -w '%{http_code}' "$HTTP_URL/dcl.v1.InventoryService/ListSites")
check "GET on a procedure: 405" [ "$code" = 405 ]
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: text/plain' \
  -H "Authorization: Bearer $op" --data '{}' "$HTTP_URL/dcl.v1.InventoryService/ListSites")
check "another content type: 415" [ "$code" = 415 ]
code=$(curl -sS -o /dev/null -w '%{http_code}' "$HTTP_URL/")
check "no console configured: / is 404" [ "$code" = 404 ]

call "$HTTP_RESERVATION_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId":"'"$rack"'"}'
check "the reservation server's own listener serves only its service: 404" status_is 404

# WatchMove, a Connect server stream. A move started, then cancelled (terminal): the watch
# replays both events and ends with an OK end-of-stream message.
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice \
  '{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_DL_0001"'","side":"SIDE_FRONT","unit":20}'
check "DL-0001 placed at U20" status_is 200
call "$HTTP_URL" "$op" dcl.v1.MoveService/StartMove \
  '{"deviceId":"'"$DCL_DEMO_DEVICE_DL_0001"'","destinationRackId":"'"$rack"'","destinationSide":"SIDE_FRONT","destinationUnit":30}'
check "StartMove through the relay: 200" status_is 200
move=$(body_field id)
call "$HTTP_MOVES_URL" "$op" dcl.v1.MoveService/CancelMove '{"moveId":"'"$move"'","note":"curl"}'
check "CancelMove on the moves server's own listener: 200" status_is 200

watch() {  # watch URL MOVE TIMEOUT_MS → $suite_dir/stream
  python3 -c 'import json,struct,sys; m=json.dumps({"moveId":sys.argv[1]}).encode(); sys.stdout.buffer.write(struct.pack(">BI",0,len(m))+m)' "$2" >"$suite_dir/watch-request"
  curl -sS -N -D "$suite_dir/headers" -o "$suite_dir/stream" -w '%{http_code}' -X POST \
    "$1/dcl.v1.MoveService/WatchMove" -H "Authorization: Bearer $op" \
    -H 'Content-Type: application/connect+json' -H "Connect-Timeout-Ms: $3" \
    --data-binary @"$suite_dir/watch-request" >"$suite_dir/status"
}
frames() {  # prints "flags json" per envelope of the stream
  python3 - "$suite_dir/stream" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
i = 0
while i < len(data):
    flags, size = struct.unpack(">BI", data[i:i + 5])
    print(flags, data[i + 5:i + 5 + size].decode())
    i += 5 + size
if i != len(data):
    print("TRAILING-BYTES")
PY
}
watch "$HTTP_URL" "$move" 10000
frames >"$suite_dir/frames"
check "WatchMove answers 200 application/connect+json" header_is Content-Type application/connect+json
check "  two events, then the end of the stream" [ "$(wc -l <"$suite_dir/frames")" = 3 ]
check "  first the planning" grep -q '^0 .*"toState":"MOVE_PLANNED"' "$suite_dir/frames"
check "  then the cancellation" grep -q '^0 .*"toState":"MOVE_CANCELLED"' "$suite_dir/frames"
check "  the end-of-stream message carries no error" grep -qx '2 {}' "$suite_dir/frames"

# A watch of a move someone else cannot see, and one cut by its deadline.
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice \
  '{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_DL_0002"'","side":"SIDE_FRONT","unit":21}'
call "$HTTP_URL" "$op" dcl.v1.MoveService/StartMove \
  '{"deviceId":"'"$DCL_DEMO_DEVICE_DL_0002"'","destinationRackId":"'"$rack"'","destinationSide":"SIDE_FRONT","destinationUnit":31}'
open_move=$(body_field id)
watch "$HTTP_URL" "$open_move" 1500
frames >"$suite_dir/frames"
check "a watch with Connect-Timeout-Ms 1500 streams the planning" grep -q '^0 .*MOVE_PLANNED' "$suite_dir/frames"
check "  and ends with deadline_exceeded in the end-of-stream message" \
  grep -q '^2 {"error":{"code":"deadline_exceeded"' "$suite_dir/frames"
call "$HTTP_URL" "$op" dcl.v1.MoveService/AdvanceMove '{"moveId":"'"$move"'","target":"MOVE_APPROVED"}'
check "advancing a cancelled move: 400 INVALID_TRANSITION" reason_is INVALID_TRANSITION

# A watch cut by its deadline gives its slot back once its handler sees the deadline: the server
# checks for a cancelled client every 200 ms, so curl can end a moment before the slot is free.
# A next watch is retried while it is refused for the limit, bounded: still refused after 3 s is
# a leaked slot, and the check after it fails.
watch_unknown_move() {  # → $suite_dir/frames
  for _ in $(seq 1 30); do
    watch "$HTTP_URL" "00000000-0000-0000-0000-000000000000" 2000
    frames >"$suite_dir/frames"
    grep -q '^2 {"error":{"code":"resource_exhausted"' "$suite_dir/frames" || return 0
    sleep 0.1
  done
}
watch_unknown_move
check "a watch of an unknown move: HTTP 200, not_found in the end-of-stream message" \
  grep -q '^2 {"error":{"code":"not_found"' "$suite_dir/frames"

# The stream limit (one per organization here): a second watch while one runs is refused
# with resource_exhausted / LIMIT_REACHED in its end-of-stream message.
python3 -c 'import json,struct,sys; m=json.dumps({"moveId":sys.argv[1]}).encode(); sys.stdout.buffer.write(struct.pack(">BI",0,len(m))+m)' "$open_move" >"$suite_dir/first-watch"
curl -sS -N -o "$suite_dir/first-stream" -X POST "$HTTP_URL/dcl.v1.MoveService/WatchMove" \
  -H "Authorization: Bearer $op" -H 'Content-Type: application/connect+json' \
  -H 'Connect-Timeout-Ms: 8000' --data-binary @"$suite_dir/first-watch" &
first_watch=$!
for _ in $(seq 1 100); do [ -s "$suite_dir/first-stream" ] && break; sleep 0.1; done
watch "$HTTP_URL" "$open_move" 3000
frames >"$suite_dir/frames"
check "a second watch beyond the organization's limit: resource_exhausted at the end" \
  grep -q '^2 {"error":{"code":"resource_exhausted"' "$suite_dir/frames"
check "  reason LIMIT_REACHED" grep -q 'LIMIT_REACHED' "$suite_dir/frames"
wait "$first_watch" || true
watch_unknown_move
check "  the slot is given back when the first watch ends (a new watch admitted within 3 s)" \
  grep -q '^2 {"error":{"code":"not_found"' "$suite_dir/frames"

# A lock held elsewhere past the server's lock_timeout (5 s): a session holds the row of a device
# in a transaction, so PlaceDevice of that device cannot take its row lock and answers ABORTED /
# RETRY_TRANSACTION (409): retry now; nothing was written. Deterministic, unlike a lost race.
/usr/lib/postgresql/15/bin/psql "$SUITE_OWNER_URL" -qc \
  "BEGIN; SELECT id FROM devices WHERE id = '$DCL_DEMO_DEVICE_DL_0004' FOR UPDATE; SELECT pg_sleep(9); COMMIT;" \
  >/dev/null &
locker=$!
for _ in $(seq 100); do
  held=$(/usr/lib/postgresql/15/bin/psql "$SUITE_OWNER_URL" -tAqc \
    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(9)%' AND wait_event = 'PgSleep'")
  [ "$held" = 1 ] && break
  sleep 0.1
done
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/PlaceDevice \
  '{"rackId":"'"$rack"'","deviceId":"'"$DCL_DEMO_DEVICE_DL_0004"'","side":"SIDE_FRONT","unit":36}'
check "PlaceDevice of a device whose row another session holds: 409 aborted" status_is 409
check "  code aborted" field_is code aborted
check "  reason RETRY_TRANSACTION" reason_is RETRY_TRANSACTION
wait "$locker"
call "$HTTP_URL" "$op" dcl.v1.OccupancyService/GetRack '{"rackId": "'"$rack"'"}'
check "  and nothing was written: the device is nowhere in the rack" \
  bash -c "! grep -q '$DCL_DEMO_DEVICE_DL_0004' '$suite_dir/body'"

# A lost race: six Reserve calls with one idempotency key at once. One reservation results;
# a call that lost its insert race is ABORTED / CONTENDED (409), one that came later replays.
racers=()
for i in 1 2 3 4 5 6; do
  curl -sS -o "$suite_dir/race-$i" -w '%{http_code}' -X POST \
    "$HTTP_RESERVATION_URL/dcl.v1.ReservationService/Reserve" -H "Authorization: Bearer $TOKEN_commerce" \
    -H 'Content-Type: application/json' \
    -d '{"idempotencyKey":"curl-race","criteria":{"siteId":"'"$DCL_DEMO_SITE_FRA1"'"}}' >"$suite_dir/race-$i.status" &
  racers+=($!)
done
wait "${racers[@]}"
race_ok=1
for i in 1 2 3 4 5 6; do
  code=$(cat "$suite_dir/race-$i.status")
  if [ "$code" = 409 ]; then
    cp "$suite_dir/race-$i" "$suite_dir/body"
    [ "$(body_field code)" = aborted ] && [ "$(info_reason)" = CONTENDED ] || race_ok=0
  elif [ "$code" != 200 ]; then
    race_ok=0
  fi
done
check "six Reserves with one key: each 200, or 409 aborted CONTENDED ($(grep -l 409 "$suite_dir"/race-*.status | wc -l) lost)" [ "$race_ok" = 1 ]
call "$HTTP_URL" "$TOKEN_commerce" dcl.v1.ReservationService/ListReservations '{"state":"RESERVATION_HELD"}'
check "  one reservation held for the key" [ "$(grep -o '"idempotencyKey":"curl-race"' "$suite_dir/body" | wc -l)" = 1 ]

# The reservation server gone: the relay answers 503 unavailable.
kill -TERM "${suite_pids[0]}"
wait "${suite_pids[0]}" 2>/dev/null || true
call "$HTTP_URL" "$TOKEN_commerce" dcl.v1.ReservationService/ListReservations '{}'
check "a relayed service that is down: 503 unavailable" status_is 503
check "  code unavailable" field_is code unavailable

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed; server logs in $suite_dir" >&2
  exit 1
fi
echo "all checks passed"
