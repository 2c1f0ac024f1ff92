// reservation_server: the ReservationService on 127.0.0.1:50051 (--listen or
// DCL_RESERVATION_LISTEN). Hold bounds: --reservation_default_ttl_seconds (15 min) and
// --reservation_max_ttl_seconds (24 h).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "services/common/command_line.h"
#include "services/common/rpc_gate.h"
#include "services/common/server.h"
#include "services/common/service_main.h"
#include "services/reservation/reservation_logic.h"
#include "services/reservation/reservation_service.h"

ABSL_FLAG(int, reservation_default_ttl_seconds, 15 * 60,
          "how long a hold lasts when the request names no TTL");
ABSL_FLAG(int, reservation_max_ttl_seconds, 24 * 60 * 60, "the longest TTL a request may ask for");

int main(int argc, char** argv) {
  dcl::BlockTerminationSignals();
  dcl::ParseCommandLineOrExit(
      argc, argv,
      {"reservation_server",
       "reservation_server: the ReservationService (Reserve, Convert, Cancel ...) on "
       "127.0.0.1:50051.\n  reservation_server --database_url=CONNINFO [--listen=HOST:PORT] ...",
       __FILE__, dcl::ServerSharedFlags()});
  dcl::reservation::ReservationOptions options;
  options.default_ttl_seconds = absl::GetFlag(FLAGS_reservation_default_ttl_seconds);
  options.max_ttl_seconds = absl::GetFlag(FLAGS_reservation_max_ttl_seconds);
  if (absl::Status valid = dcl::reservation::ValidateOptions(options); !valid.ok()) {
    std::fprintf(stderr, "reservation_server: %s\n", std::string(valid.message()).c_str());
    return dcl::kExitConfigurationError;  // refuse to start
  }
  return dcl::RunServiceMain(
      "reservation", "DCL_RESERVATION_LISTEN", "127.0.0.1:50051", [&](dcl::DbPool& pool, dcl::TokenCache* tokens) {
        dcl::ServiceSet set;
        auto gate = std::make_shared<dcl::RpcGate>(pool, tokens);
        auto logic = std::make_shared<dcl::reservation::ReservationLogic>(pool, options);
        auto svc = std::make_shared<dcl::reservation::ReservationServiceImpl>(*gate, *logic);
        set.services.push_back({"dcl.v1.ReservationService", svc.get()});
        set.keep_alive = {gate, logic, svc};
        return set;
      });
}
