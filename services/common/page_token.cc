#include "services/common/page_token.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl {
namespace {

constexpr int kDefaultPageSize = 50;

absl::Status ForeignToken() {
  return InvalidInput("page_token", "is not a token this service issued");
}

}  // namespace

int PageSize(int64_t requested) {
  return requested <= 0 ? kDefaultPageSize
                        : static_cast<int>(std::min<int64_t>(requested, kMaxPageSize));
}

std::string CreationListingCondition(const std::string& alias) {
  return absl::StrCat(alias, ".created_at IS NOT NULL");
}

std::string EncodePageToken(const PageCursor& cursor) {
  return cursor.id.empty() ? absl::StrCat(cursor.key) : absl::StrCat(cursor.key, ".", cursor.id);
}

absl::StatusOr<std::optional<PageCursor>> DecodePageToken(const std::string& token,
                                                          PageOrder order) {
  if (token.empty()) return std::optional<PageCursor>();
  PageCursor cursor;
  switch (order) {
    case PageOrder::kCreation: {
      const size_t dot = token.find('.');
      if (dot == std::string::npos || !absl::SimpleAtoi(token.substr(0, dot), &cursor.key) ||
          !IsUuid(token.substr(dot + 1))) {
        return ForeignToken();
      }
      cursor.id = token.substr(dot + 1);
      break;
    }
    case PageOrder::kSerialId:
      // Serial ids start at 1.
      if (!absl::SimpleAtoi(token, &cursor.key) || cursor.key <= 0) return ForeignToken();
      break;
  }
  return std::optional<PageCursor>(std::move(cursor));
}

}  // namespace dcl
