// The command groups of dclctl, one file each; commands.cc concatenates them into the table
// (a new group: one declaration here, one line in the table, its file in BUILD).
#ifndef DCL_DCLCTL_COMMAND_GROUPS_H_
#define DCL_DCLCTL_COMMAND_GROUPS_H_

#include <vector>

#include "dclctl/command_support.h"

namespace dcl::admin {

std::vector<Command> RackCommands();         // rack_commands.cc
std::vector<Command> BookingCommands();      // booking_commands.cc
std::vector<Command> DeliveryCommands();     // delivery_commands.cc
std::vector<Command> DeviceCommands();       // device_commands.cc
std::vector<Command> ImportCommands();       // import_commands.cc
std::vector<Command> MoveCommands();         // move_commands.cc
std::vector<Command> ReservationCommands();  // reservation_commands.cc

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_COMMAND_GROUPS_H_
