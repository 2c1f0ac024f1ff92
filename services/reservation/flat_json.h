// A reader for one JSON shape: an array of objects whose values are all scalars (a string, a
// number, true, false or null). dcl_reserve_call answers a refusal's explanation in that shape
// (jsonb_agg of dcl_exclusion_summary's rows, schema/migrations/0035), and the server decodes it
// on every refusal. protobuf's JSON reader took 34-41 us per refusal on one core and 17 % of
// the handler threads' samples under 32 clients of refusals (docs/performance.md); this one
// reads the same text in one pass (2-3 us). Strict: anything else (nesting, a duplicate key, a raw control
// character or invalid UTF-8 in a string, a lone surrogate, trailing text) is refused, never
// guessed.
#ifndef DCL_SERVICES_RESERVATION_FLAT_JSON_H_
#define DCL_SERVICES_RESERVATION_FLAT_JSON_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dcl::reservation {

struct FlatJsonValue {
  enum class Kind { kNull, kBool, kNumber, kString };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // a string's value, its escapes decoded (UTF-8)
};

using FlatJsonObject = std::map<std::string, FlatJsonValue, std::less<>>;

// The objects of `json` in order, or nullopt when `json` is not such an array.
std::optional<std::vector<FlatJsonObject>> ParseFlatJsonObjects(absl::string_view json);

}  // namespace dcl::reservation

#endif  // DCL_SERVICES_RESERVATION_FLAT_JSON_H_
