// The names of the four booking kinds, in one table: the word bookings.kind stores, which is also
// the word dclctl's --kind and --expect_kind take ("move_hold"), and the word a person reads in a
// rack elevation or a refusal ("move hold"). The store, the logic and dclctl all name a kind from
// here, so a kind is spelled once.
#ifndef DCL_SERVICES_COMMON_BOOKING_KIND_H_
#define DCL_SERVICES_COMMON_BOOKING_KIND_H_

#include <string>

#include "dcl/v1/occupancy.pb.h"

namespace dcl {

struct BookingKindNames {
  v1::BookingKind kind;
  const char* stored;   // bookings.kind, and the flag value: "move_hold"
  const char* display;  // for people: "move hold"
};

// Every kind but BOOKING_KIND_UNSPECIFIED, in the order dclctl's messages list them.
inline constexpr BookingKindNames kBookingKinds[] = {
    {v1::BOOKING_PLACEMENT, "placement", "placement"},
    {v1::BOOKING_BLOCKING, "blocking", "blocking"},
    {v1::BOOKING_RESERVATION, "reservation", "reservation"},
    {v1::BOOKING_MOVE_HOLD, "move_hold", "move hold"},
};

// The kind as stored in bookings.kind ("placement", "blocking", "move_hold", "reservation"),
// and back; anything else is "" / BOOKING_KIND_UNSPECIFIED.
const char* BookingKindName(v1::BookingKind kind);
v1::BookingKind ParseBookingKind(const std::string& name);

// "placement", "blocking", "move hold", "reservation"; "unknown" for anything else.
const char* BookingKindDisplayName(v1::BookingKind kind);

// "placement, blocking, reservation or move_hold": the stored names, as a usage message lists
// the values a flag takes.
std::string BookingKindChoices();

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_BOOKING_KIND_H_
