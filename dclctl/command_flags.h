// dclctl's flags, defined in command_flags.cc (absl keeps one definition per name); every
// command group reads them from here. --name is db_commands.cc's.
#ifndef DCL_DCLCTL_COMMAND_FLAGS_H_
#define DCL_DCLCTL_COMMAND_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, target);
ABSL_DECLARE_FLAG(std::string, token);
ABSL_DECLARE_FLAG(std::string, dcl_token_file);
ABSL_DECLARE_FLAG(std::string, reservation_target);
ABSL_DECLARE_FLAG(std::string, reservation_token);
ABSL_DECLARE_FLAG(std::string, reservation_token_file);
ABSL_DECLARE_FLAG(std::string, occupancy_target);
ABSL_DECLARE_FLAG(std::string, occupancy_token);
ABSL_DECLARE_FLAG(std::string, occupancy_token_file);
ABSL_DECLARE_FLAG(std::string, moves_target);
ABSL_DECLARE_FLAG(std::string, moves_token);
ABSL_DECLARE_FLAG(std::string, moves_token_file);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_client_cert);
ABSL_DECLARE_FLAG(std::string, tls_client_key);
ABSL_DECLARE_FLAG(int, deadline_seconds);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, svg);
ABSL_DECLARE_FLAG(std::string, rack);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(std::string, side);
ABSL_DECLARE_FLAG(std::string, unit);
ABSL_DECLARE_FLAG(std::string, first);
ABSL_DECLARE_FLAG(std::string, last);
ABSL_DECLARE_FLAG(bool, both_sides);
ABSL_DECLARE_FLAG(std::string, kind);
ABSL_DECLARE_FLAG(std::string, expect_kind);
ABSL_DECLARE_FLAG(int, ttl_seconds);
ABSL_DECLARE_FLAG(std::string, reason);
ABSL_DECLARE_FLAG(bool, draft);
ABSL_DECLARE_FLAG(std::string, note);
ABSL_DECLARE_FLAG(std::string, to);
ABSL_DECLARE_FLAG(std::string, observation);
ABSL_DECLARE_FLAG(std::string, state);
ABSL_DECLARE_FLAG(std::string, key);
ABSL_DECLARE_FLAG(int, limit);
ABSL_DECLARE_FLAG(std::string, page_token);
ABSL_DECLARE_FLAG(std::string, site);
ABSL_DECLARE_FLAG(std::string, vendor);
ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, profile);
ABSL_DECLARE_FLAG(std::string, serial);
ABSL_DECLARE_FLAG(std::string, height);
ABSL_DECLARE_FLAG(std::string, depth);
ABSL_DECLARE_FLAG(std::string, power);
ABSL_DECLARE_FLAG(std::string, weight);
ABSL_DECLARE_FLAG(std::string, power_ports);
ABSL_DECLARE_FLAG(std::string, ports);
ABSL_DECLARE_FLAG(std::string, airflow);
ABSL_DECLARE_FLAG(std::string, cooling);
ABSL_DECLARE_FLAG(std::string, window_days);
ABSL_DECLARE_FLAG(bool, none);
ABSL_DECLARE_FLAG(std::string, first_unit);
ABSL_DECLARE_FLAG(bool, descending);
ABSL_DECLARE_FLAG(bool, front_only);
ABSL_DECLARE_FLAG(bool, all);
ABSL_DECLARE_FLAG(std::string, request_id);
ABSL_DECLARE_FLAG(std::string, dir);
ABSL_DECLARE_FLAG(std::string, url);
ABSL_DECLARE_FLAG(std::string, token_file);
ABSL_DECLARE_FLAG(std::string, ca);
ABSL_DECLARE_FLAG(int, netbox_timeout_seconds);
ABSL_DECLARE_FLAG(int, netbox_attempts);
ABSL_DECLARE_FLAG(int, netbox_backoff_ms);
ABSL_DECLARE_FLAG(int64_t, netbox_max_bytes);
ABSL_DECLARE_FLAG(std::string, site_map);
ABSL_DECLARE_FLAG(bool, dry_run);
ABSL_DECLARE_FLAG(std::string, service);
ABSL_DECLARE_FLAG(std::string, name);  // db_commands.cc

#endif  // DCL_DCLCTL_COMMAND_FLAGS_H_
