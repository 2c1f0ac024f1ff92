#include "services/common/booking_kind.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace dcl {

const char* BookingKindName(v1::BookingKind kind) {
  for (const BookingKindNames& names : kBookingKinds) {
    if (names.kind == kind) return names.stored;
  }
  return "";
}

v1::BookingKind ParseBookingKind(const std::string& name) {
  for (const BookingKindNames& names : kBookingKinds) {
    if (name == names.stored) return names.kind;
  }
  return v1::BOOKING_KIND_UNSPECIFIED;
}

const char* BookingKindDisplayName(v1::BookingKind kind) {
  for (const BookingKindNames& names : kBookingKinds) {
    if (names.kind == kind) return names.display;
  }
  return "unknown";
}

std::string BookingKindChoices() {
  std::string choices;
  const size_t count = std::size(kBookingKinds);
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) absl::StrAppend(&choices, i + 1 == count ? " or " : ", ");
    absl::StrAppend(&choices, kBookingKinds[i].stored);
  }
  return choices;
}

}  // namespace dcl
