// Keyset paging, the one convention of every List RPC. A list reads page_size + 1 rows in its
// own order; the extra row only tells that another page follows. next_page_token names the last
// row returned, so the next page starts right after it whatever was written in between (no
// offsets: rows added or removed before the cursor neither repeat nor skip a row).
#ifndef DCL_SERVICES_COMMON_PAGE_TOKEN_H_
#define DCL_SERVICES_COMMON_PAGE_TOKEN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace dcl {

// How a list orders its rows, which decides what its cursor holds.
enum class PageOrder {
  kCreation,  // by (created_at, uuid id), either direction: sites, racks, devices, moves, ...
  kSerialId,  // by a bigserial id alone: a device's location history
};

// Where a page ends: the sort key of its last row. kCreation: `key` is created_at in
// microseconds since the epoch and `id` the row's uuid. kSerialId: `key` is the row's id and
// `id` is empty.
struct PageCursor {
  int64_t key = 0;
  std::string id;
};

// The condition every kCreation list states, "<alias>.created_at IS NOT NULL": always true, and
// the predicate of its table's listing index (org_id, created_at, id) WHERE created_at IS NOT
// NULL (migration 0028). Only a statement that states it may use that index, so a lookup by key
// or id never takes the listing index for its unique index when the statistics are thin.
std::string CreationListingCondition(const std::string& alias);

// Rows read in a list's order, each with its cursor (cursors[i] is where rows[i] ends a page).
template <typename T>
struct Page {
  std::vector<T> rows;
  std::vector<PageCursor> cursors;
};

// The number of rows a page holds: 50 for 0 (unset), a larger request coerced to kMaxPageSize
// (AIP-158: a client asking for more gets the most the server gives, and next_page_token says
// that more follows). The gate has refused negative sizes already (kIntegerRanges); treating
// them as unset keeps direct callers of the logic safe too.
int PageSize(int64_t requested);

// The client's opaque token: "<key>.<id>", or "<key>" for a kSerialId cursor.
std::string EncodePageToken(const PageCursor& cursor);

// The cursor a request's token names; nullopt for "" (the first page). A token that this
// service could not have issued for a list in `order` is INVALID_ARGUMENT on "page_token".
absl::StatusOr<std::optional<PageCursor>> DecodePageToken(const std::string& token,
                                                          PageOrder order);

// The end of a page read with a limit of page_size + 1 (page_size > 0): keeps its first
// page_size rows and returns the token that continues after the last one kept, or "" when no
// row was left over (the list ends with this page).
template <typename T>
std::string EndPage(Page<T>& page, int page_size) {
  if (static_cast<int>(page.rows.size()) <= page_size) return "";
  page.rows.resize(page_size);
  page.cursors.resize(page_size);
  return EncodePageToken(page.cursors.back());
}

// EndPage, then the kept rows moved into a response's repeated field (`out->Add()`).
template <typename T, typename Repeated>
std::string TakePage(Page<T> page, int page_size, Repeated* out) {
  std::string next = EndPage(page, page_size);
  for (T& row : page.rows) *out->Add() = std::move(row);
  return next;
}

}  // namespace dcl

#endif  // DCL_SERVICES_COMMON_PAGE_TOKEN_H_
