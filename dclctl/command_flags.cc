// The definitions of dclctl's flags (command_flags.h declares them).
#include "dclctl/command_flags.h"

#include "absl/flags/flag.h"

// Where the calls go (grpc_client.h has the order of precedence).
ABSL_FLAG(std::string, target, "",
          "host:port of every service (else $DCL_TARGET; default per service: "
          "127.0.0.1:50051 reservation, :50052 occupancy, :50053 moves)");
// Tokens come from the environment or a file: a token on the command line is shown to every
// user of the machine (ps, /proc/PID/cmdline). The --*token flags exist only to refuse that.
ABSL_FLAG(std::string, token, "", "refused (ps shows it): set $DCL_TOKEN or use --dcl_token_file");
ABSL_FLAG(std::string, dcl_token_file, "",
          "a file holding the bearer token for every service (else $DCL_TOKEN)");
ABSL_FLAG(std::string, reservation_target, "",
          "ReservationService host:port (else --target, $DCL_RESERVATION_TARGET)");
ABSL_FLAG(std::string, reservation_token, "",
          "refused (ps shows it): set $DCL_RESERVATION_TOKEN or use --reservation_token_file");
ABSL_FLAG(std::string, reservation_token_file, "",
          "a file holding the token for ReservationService, a commerce token (else "
          "--dcl_token_file, $DCL_RESERVATION_TOKEN)");
ABSL_FLAG(std::string, occupancy_target, "",
          "OccupancyService host:port (else --target, $DCL_OCCUPANCY_TARGET)");
ABSL_FLAG(std::string, occupancy_token, "",
          "refused (ps shows it): set $DCL_OCCUPANCY_TOKEN or use --occupancy_token_file");
ABSL_FLAG(std::string, occupancy_token_file, "",
          "a file holding the token for OccupancyService (else --dcl_token_file, "
          "$DCL_OCCUPANCY_TOKEN)");
ABSL_FLAG(std::string, moves_target, "",
          "MoveService host:port (else --target, $DCL_MOVES_TARGET)");
ABSL_FLAG(std::string, moves_token, "",
          "refused (ps shows it): set $DCL_MOVES_TOKEN or use --moves_token_file");
ABSL_FLAG(std::string, moves_token_file, "",
          "a file holding the token for MoveService (else --dcl_token_file, $DCL_MOVES_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "", "PEM file of the CA that signed the servers' certificates: TLS");
ABSL_FLAG(std::string, tls_client_cert, "", "with --tls_ca: PEM client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_client_key, "", "with --tls_client_cert: its PEM private key");
ABSL_FLAG(int, deadline_seconds, 15, "how long one call may take (streams: no limit)");
// Output.
ABSL_FLAG(bool, json, false, "print answers as JSON (protobuf's mapping, .proto field names)");
ABSL_FLAG(std::string, svg, "", "rack show: also write the elevation as an SVG picture here");
// What to book or move. Units are text so that a missing one differs from unit 0.
ABSL_FLAG(std::string, rack, "", "rack id");
ABSL_FLAG(std::string, device, "", "device id");
ABSL_FLAG(std::string, side, "", "front or rear");
ABSL_FLAG(std::string, unit, "", "place, move start: the device's lowest rack unit");
ABSL_FLAG(std::string, first, "", "block, reserve-units, plan: first unit of the range");
ABSL_FLAG(std::string, last, "", "block, reserve-units, plan: last unit of the range");
ABSL_FLAG(bool, both_sides, false, "block, reserve-units, plan: front and rear");
// The values of --kind and --expect_kind are the stored names of services/common/booking_kind.h.
ABSL_FLAG(std::string, kind, "placement", "plan: placement, blocking, reservation or move_hold");
ABSL_FLAG(std::string, expect_kind, "",
          "release: only if the booking is still this kind (placement, blocking, reservation or "
          "move_hold)");
ABSL_FLAG(int, ttl_seconds, 0,
          "reserve-units: how long the units stay reserved (0: server default)");
ABSL_FLAG(std::string, reason, "", "why (recorded with the booking or its release)");
ABSL_FLAG(bool, draft, false, "move start: start as a draft instead of planned");
ABSL_FLAG(std::string, note, "", "move: a note recorded with the change");
ABSL_FLAG(std::string, to, "", "move advance: the target state (approved, in_progress …)");
ABSL_FLAG(std::string, observation, "",
          "move advance from needs_reconcile: found_at_destination or not_moved");
// Lists.
ABSL_FLAG(std::string, state, "",
          "move list, reservation list, device list: only this state; device register "
          "(default staging), device set-state: normal or staging");
ABSL_FLAG(std::string, key, "", "reservation show: the order's idempotency key instead of an id");
ABSL_FLAG(int, limit, 100, "lists: at most this many rows");
ABSL_FLAG(std::string, page_token, "", "lists: continue after an earlier answer's next_page_token");
// Inventory.
ABSL_FLAG(std::string, site, "",
          "site id (device register, rack create; a filter of lists); import netbox --url: NetBox "
          "site slugs (repeatable, or comma-separated)");
ABSL_FLAG(std::string, vendor, "", "device register; device list: only this vendor");
ABSL_FLAG(std::string, model, "", "device register; device list: only this model");
ABSL_FLAG(std::string, profile, "",
          "device register: hardware profile; device list: only this one");
ABSL_FLAG(std::string, serial, "", "device register: the serial number (unique per organization)");
ABSL_FLAG(std::string, height, "",
          "device register: units high (1..20); rack create: units (1..100)");
ABSL_FLAG(std::string, depth, "unknown",
          "device register: full, half or unknown (claims both sides)");
ABSL_FLAG(std::string, power, "",
          "device register: power draw in watts (absent: unknown); capacity: a typical "
          "device's draw");
ABSL_FLAG(std::string, weight, "",
          "device register: weight in kg (absent: unknown); capacity: a typical device's weight");
ABSL_FLAG(std::string, power_ports, "",
          "device register: power ports (0..16; absent: unknown)");
ABSL_FLAG(std::string, airflow, "",
          "device register: front-to-rear, rear-to-front, left-to-right, right-to-left, "
          "side-to-rear, rear-to-side, bottom-to-top, top-to-bottom, passive or mixed "
          "(absent: unknown); rack update: front-to-rear, rear-to-front or none");
ABSL_FLAG(std::string, ports, "",
          "device register: network ports needed, SPEED:COUNT,... (e.g. 10g:2,1g:1; none: needs "
          "none; absent: unknown); rack update: switch ports offered (none: none recorded); "
          "speeds 1g, 10g, 25g, 100g");
ABSL_FLAG(bool, none, false, "rack feeds: remove every feed of the rack");
ABSL_FLAG(std::string, cooling, "", "rack update: cooling budget in watts (0: none)");
ABSL_FLAG(std::string, window_days, "",
          "capacity: the forecast's window in days back from now (1..365; absent: 30)");
ABSL_FLAG(std::string, first_unit, "1", "rack create: the number of its first unit");
ABSL_FLAG(bool, descending, false, "rack create: numbers grow from the top down");
ABSL_FLAG(bool, front_only, false, "rack create: an open frame, no rear side");
ABSL_FLAG(bool, all, false, "device list: include decommissioned devices");
ABSL_FLAG(std::string, request_id, "",
          "writes: retry-safe request id (any text; the same text replays the first answer); "
          "default a fresh random one");
// Import.
ABSL_FLAG(std::string, dir, "", "import netbox: the directory of the saved NetBox list responses");
ABSL_FLAG(std::string, url, "", "import netbox: NetBox's base URL (https://netbox.example.net)");
ABSL_FLAG(std::string, token_file, "",
          "import netbox --url: a file holding the NetBox API token (v1, or v2 nbt_…)");
ABSL_FLAG(std::string, ca, "", "import netbox --url: PEM file of a private CA (else the system's)");
ABSL_FLAG(int, netbox_timeout_seconds, 30, "import netbox --url: how long one request may take");
ABSL_FLAG(int, netbox_attempts, 5,
          "import netbox --url: attempts per request on 429, 5xx and transport failures");
ABSL_FLAG(int, netbox_backoff_ms, 500,
          "import netbox --url: the first wait before a retry (doubled each time, at most 30 s)");
ABSL_FLAG(int64_t, netbox_max_bytes, int64_t{1} << 30,
          "import netbox --url: the most the pages of all lists may hold together (they stay in "
          "memory until parsed); more ends the import, nothing written (exit 4)");
ABSL_FLAG(std::string, site_map, "",
          "import netbox: NETBOX_SITE=DCL_SITE,… (slug or name → the dcl site name)");
ABSL_FLAG(bool, dry_run, false, "import netbox: show what would change, write nothing");
// Health.
ABSL_FLAG(std::string, service, "", "health check: a service name (default: the whole server)");

