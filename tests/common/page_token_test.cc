// Keyset paging without a database: what a token holds, which tokens are refused, and where a
// page ends.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "services/common/page_token.h"
#include "services/common/status.h"
#include "services/common/validation.h"

namespace dcl {
namespace {

constexpr char kUuid[] = "0f8fad5b-d9cb-469f-a165-70867728950e";

std::string FieldOf(const absl::Status& status) {
  std::optional<v1::ErrorDetail> detail = GetErrorDetail(status);
  if (!detail) return "(no detail)";
  auto it = detail->metadata().find("field");
  return it == detail->metadata().end() ? "(no field)" : it->second;
}

// A fake repeated field: rows land where Add() points.
struct Rows {
  std::vector<std::string> rows;
  std::string* Add() { return &rows.emplace_back(); }
};

Page<std::string> PageOf(int rows) {
  Page<std::string> page;
  for (int i = 1; i <= rows; ++i) {
    page.rows.push_back("row " + std::to_string(i));
    page.cursors.push_back({i, kUuid});
  }
  return page;
}

TEST_CASE("a token names the cursor it was made from, in either order") {
  absl::StatusOr<std::optional<PageCursor>> creation =
      DecodePageToken(EncodePageToken({-1234567, kUuid}), PageOrder::kCreation);
  REQUIRE(creation.ok());
  REQUIRE(creation->has_value());
  CHECK((*creation)->key == -1234567);  // before 1970 is a time like any other
  CHECK((*creation)->id == kUuid);

  absl::StatusOr<std::optional<PageCursor>> serial =
      DecodePageToken(EncodePageToken({42, ""}), PageOrder::kSerialId);
  REQUIRE(serial.ok());
  REQUIRE(serial->has_value());
  CHECK((*serial)->key == 42);
  CHECK((*serial)->id.empty());
}

TEST_CASE("no token is the first page") {
  absl::StatusOr<std::optional<PageCursor>> first = DecodePageToken("", PageOrder::kCreation);
  REQUIRE(first.ok());
  CHECK_FALSE(first->has_value());
}

// Every token of `tokens` is refused for a list in `order`, naming the field.
void CheckRefused(const std::vector<std::string>& tokens, PageOrder order) {
  for (const std::string& token : tokens) {
    INFO(token);
    absl::StatusOr<std::optional<PageCursor>> decoded = DecodePageToken(token, order);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(FieldOf(decoded.status()) == "page_token");
  }
}

TEST_CASE("a token this service did not issue for the list is INVALID_ARGUMENT on page_token") {
  const std::string uuid = kUuid;
  CheckRefused({"garbage", "12345", "12345.not-a-uuid", "x." + uuid, "12345_" + uuid,
                "99999999999999999999." + uuid, "." + uuid, "12345.", "1.2." + uuid},
               PageOrder::kCreation);
  CheckRefused({"not-a-token", "0", "-3", "12." + uuid, "99999999999999999999"},
               PageOrder::kSerialId);
}

TEST_CASE("a page read with one row more than it holds continues after its last row kept") {
  Rows out;
  const std::string next = TakePage(PageOf(4), 3, &out);
  CHECK(out.rows == std::vector<std::string>{"row 1", "row 2", "row 3"});
  CHECK(next == EncodePageToken({3, kUuid}));
}

TEST_CASE("a page without a row left over ends the list, even when it is full") {
  Rows full;
  CHECK(TakePage(PageOf(3), 3, &full).empty());
  CHECK(full.rows.size() == 3);
  Rows short_page;
  CHECK(TakePage(PageOf(1), 3, &short_page).empty());
  Page<std::string> empty = PageOf(0);
  CHECK(EndPage(empty, 3).empty());
}

TEST_CASE("the page size is 50 when unset and never above the maximum") {
  CHECK(PageSize(0) == 50);
  CHECK(PageSize(-5) == 50);
  CHECK(PageSize(7) == 7);
  CHECK(PageSize(kMaxPageSize) == kMaxPageSize);
  CHECK(PageSize(kMaxPageSize + 1) == kMaxPageSize);
}

}  // namespace
}  // namespace dcl
