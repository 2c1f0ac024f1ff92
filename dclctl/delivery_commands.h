// dclctl's delivery commands (docs/deliveries.md): `delivery plan`, `delivery reserve` and
// `delivery place`, registered as one group (command_groups.h); the
// printers and the item parser are in delivery_format.h. Each command is a few lines around one
// call.
#ifndef DCL_DCLCTL_DELIVERY_COMMANDS_H_
#define DCL_DCLCTL_DELIVERY_COMMANDS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "dclctl/format/delivery_format.h"
#include "dclctl/grpc_client.h"

namespace dcl::admin {

// The commands; `name` is "delivery plan" etc., `args` the positional arguments after it.
// Return the exit status (cli_format.h); usage mistakes print the usage and return 2.
int DeliveryPlanCommand(const std::string& name, const std::vector<std::string>& args,
                        const ClientOptions& client, bool json);
int DeliveryReserveCommand(const std::string& name, const std::vector<std::string>& args,
                           const ClientOptions& client, bool json, const std::string& request_id);
int DeliveryPlaceCommand(const std::string& name, const std::vector<std::string>& args,
                         const ClientOptions& client, bool json, const std::string& request_id);

// Items on one command line, at most (the server's limit per delivery).
inline constexpr size_t kMaxDeliveryArgs = 1000;

// The usage lines commands.cc shows in its table.
inline constexpr char kDeliveryPlanUsage[] =
    "--site S ITEM... [--racks R1,R2] [--keep_together | --max_per_rack N] [--side S] "
    "[--power_headroom W] [--weight_headroom KG] [--svg FILE]   (ITEM: DEVICE_ID or "
    "2U/full/800W/25kg/x4/LABEL)";
inline constexpr char kDeliveryReserveUsage[] =
    "--site S ITEM... [--racks R1,R2] [--keep_together | --max_per_rack N] [--side S] "
    "[--power_headroom W] [--weight_headroom KG] [--svg FILE] [--ttl_seconds N] [--reason T] "
    "[--request_id T]";
inline constexpr char kDeliveryPlaceUsage[] =
    "RESERVATION_ID --rack R --device D --side front|rear --unit U [--reason T]";

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_DELIVERY_COMMANDS_H_
