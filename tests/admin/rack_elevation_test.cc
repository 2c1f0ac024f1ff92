// The rack elevation renderers without a server: rows in the rack's own numbering from the top
// down, front and rear columns (front only on an open frame), multi-unit runs, half-depth
// devices, every booking kind, and the SVG's layout, colours and escaping.
#include "dclctl/format/rack_elevation.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/admin/rack_test_racks.h"

namespace dcl::admin {
namespace {

using testing::Book;
using testing::MakeRack;

constexpr char kDev1[] = "00000000-0000-4000-8000-000000000301";
constexpr char kDev2[] = "00000000-0000-4000-8000-000000000305";
constexpr char kBk1[] = "6f1c2a9e-0b7d-4c39-9d0e-1a2b3c4d5e01";
constexpr char kBk2[] = "6f1c2a9e-0b7d-4c39-9d0e-1a2b3c4d5e02";
constexpr char kBk3[] = "6f1c2a9e-0b7d-4c39-9d0e-1a2b3c4d5e03";
constexpr char kBk4[] = "6f1c2a9e-0b7d-4c39-9d0e-1a2b3c4d5e04";

// The unit numbers of the elevation's rows, in the order the text prints them.
std::vector<int> PrintedUnits(const std::vector<std::string>& lines) {
  std::vector<int> units;
  bool in_rows = false;
  for (const std::string& line : lines) {
    const std::string trimmed(absl::StripLeadingAsciiWhitespace(line));
    if (absl::StartsWith(trimmed, "U  FRONT")) {
      in_rows = true;
      continue;
    }
    if (!in_rows) continue;
    if (trimmed.empty()) break;
    units.push_back(std::stoi(std::string(trimmed.substr(0, trimmed.find(' ')))));
  }
  return units;
}

// The printed row of one unit.
std::string RowOf(const std::vector<std::string>& lines, int unit) {
  bool in_rows = false;
  for (const std::string& line : lines) {
    const std::string trimmed(absl::StripLeadingAsciiWhitespace(line));
    if (absl::StartsWith(trimmed, "U  FRONT")) {
      in_rows = true;
      continue;
    }
    if (in_rows && absl::StartsWith(trimmed, absl::StrCat(unit, " "))) return line;
  }
  return "";
}

// The header line of the rows (ASCII, so byte offsets are screen columns).
std::string HeaderOf(const std::vector<std::string>& lines) {
  for (const std::string& line : lines) {
    if (absl::StrContains(line, "U  FRONT")) return line;
  }
  return "";
}

size_t RearColumn(const std::vector<std::string>& lines) { return HeaderOf(lines).find("REAR"); }

// Screen columns [from, to) of a line, counted in UTF-8 characters.
std::string Columns(const std::string& line, size_t from, size_t to) {
  std::string out;
  size_t column = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const bool starts_char = (static_cast<unsigned char>(line[i]) & 0xC0) != 0x80;
    if (starts_char && i > 0) ++column;
    if (column >= from && column < to) out += line[i];
  }
  return out;
}

// A row cut into its cells under the headings U, FRONT and (if present) REAR.
std::vector<std::string> Cells(const std::vector<std::string>& lines, int unit) {
  const std::string header = HeaderOf(lines);
  const std::string row = RowOf(lines, unit);
  const size_t front = header.find("FRONT"), rear = header.find("REAR");
  std::vector<std::string> cells = {
      std::string(absl::StripAsciiWhitespace(Columns(row, 0, front))),
      std::string(absl::StripAsciiWhitespace(Columns(row, front, rear)))};
  if (rear != std::string::npos) {
    cells.emplace_back(absl::StripAsciiWhitespace(Columns(row, rear, std::string::npos)));
  }
  return cells;
}

std::vector<int> Range(int from, int to, int step) {
  std::vector<int> out;
  for (int u = from; step > 0 ? u <= to : u >= to; u += step) out.push_back(u);
  return out;
}

TEST_CASE("ascending 42U rack: rows from U42 at the top down to U1, front and rear columns") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(PrintedUnits(lines) == Range(42, 1, -1));
  CHECK(absl::StrContains(lines[0], "FRA1-A01"));
  CHECK(absl::StrContains(lines[1], "U1 at the bottom, U42 at the top (ascending)"));
  CHECK(RearColumn(lines) != std::string::npos);
  CHECK(UnitsTopDown(rack.geometry()).front() == 42);
  CHECK(absl::StrContains(absl::StrJoin(lines, "\n"), "free: 42 of 42 units on the front, 42 on the rear"));
}

TEST_CASE("descending 47U rack: rows from U1 at the top down to U47") {
  v1::Rack rack = MakeRack("FRA1-A02", 1, 47, v1::NUMBERING_DESCENDING, true);
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(PrintedUnits(lines) == Range(1, 47, 1));
  CHECK(absl::StrContains(lines[1], "U1 at the top, U47 at the bottom (descending)"));
}

TEST_CASE("open frame numbered from 0: rows U23 down to U0, a front column and no rear") {
  v1::Rack rack = MakeRack("FRA1-OF1", 0, 24, v1::NUMBERING_ASCENDING, false);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_FRONT, {0});
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(PrintedUnits(lines) == Range(23, 0, -1));
  CHECK(RearColumn(lines) == std::string::npos);
  CHECK(absl::StrContains(lines[1], "open frame, front only"));
  CHECK(absl::StrContains(RowOf(lines, 0), "placement    …00000301"));
  CHECK(absl::StrContains(absl::StrJoin(lines, "\n"), "free: 23 of 24 units\n"));
}

TEST_CASE("a rack whose first unit is 2: rows U45 down to U2, nothing for U1") {
  v1::Rack rack = MakeRack("AMS2-B01", 2, 44, v1::NUMBERING_ASCENDING, true);
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(PrintedUnits(lines) == Range(45, 2, -1));
  CHECK(RowOf(lines, 1).empty());
  CHECK(absl::StrContains(lines[1], "U2 at the bottom, U45 at the top"));
}

TEST_CASE("a full-depth 2U device: both faces, bracketed from its top unit down, one booking row") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev2, v1::SIDE_UNSPECIFIED, {9, 10});
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(Cells(lines, 10) ==
        std::vector<std::string>{"10", "┌ placement    …00000305", "┌ placement    …00000305"});
  CHECK(Cells(lines, 9) ==
        std::vector<std::string>{"9", "└ placement    …00000305", "└ placement    …00000305"});
  CHECK(Cells(lines, 11) == std::vector<std::string>{"11", "·", "·"});
  const std::string all = absl::StrJoin(lines, "\n");
  CHECK(absl::StrContains(all, absl::StrCat(kBk1, "  placement  ", kDev2, "  front+rear U9-U10")));
  CHECK(absl::StrContains(all, "free: 40 of 42 units on the front, 40 on the rear"));
}

TEST_CASE("a 3U device in a descending rack: its top row is its lowest number") {
  v1::Rack rack = MakeRack("FRA1-A02", 1, 47, v1::NUMBERING_DESCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev2, v1::SIDE_FRONT, {20, 21, 22});
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(absl::StrContains(RowOf(lines, 20), "┌ placement"));
  CHECK(absl::StrContains(RowOf(lines, 21), "│ placement"));
  CHECK(absl::StrContains(RowOf(lines, 22), "└ placement"));
  const Elevation e = BuildElevation(rack);
  CHECK(e.rows[19].unit == 20);
  CHECK(e.rows[19].front.run == RunPosition::kTop);
  CHECK(e.rows[21].front.run == RunPosition::kBottom);
  CHECK_FALSE(e.rows[19].rear.occupied);
}

TEST_CASE("a half-depth device on the rear only: the front of its unit stays free") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_REAR, {5});
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(Cells(lines, 5) == std::vector<std::string>{"5", "·", "placement    …00000301"});
  const std::string all = absl::StrJoin(lines, "\n");
  CHECK(absl::StrContains(all, "rear U5"));
  CHECK_FALSE(absl::StrContains(all, "front U5"));
  CHECK(absl::StrContains(all, "free: 42 of 42 units on the front, 41 on the rear"));
}

TEST_CASE("every booking kind: named in its row, a device where there is one, else the booking") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_UNSPECIFIED, {1});
  Book(rack, kBk2, v1::BOOKING_BLOCKING, "", v1::SIDE_UNSPECIFIED, {2, 3});
  Book(rack, kBk3, v1::BOOKING_MOVE_HOLD, kDev2, v1::SIDE_UNSPECIFIED, {4});
  Book(rack, kBk4, v1::BOOKING_RESERVATION, "", v1::SIDE_FRONT, {5});
  const std::vector<std::string> lines = RackElevationText(rack);
  CHECK(absl::StrContains(RowOf(lines, 1), "placement    …00000301"));
  CHECK(absl::StrContains(RowOf(lines, 3), "┌ blocking     booking …3c4d5e02"));
  CHECK(absl::StrContains(RowOf(lines, 4), "move hold    …00000305"));
  CHECK(Cells(lines, 5) ==
        std::vector<std::string>{"5", "reservation  booking …3c4d5e04", "·"});
  const std::string all = absl::StrJoin(lines, "\n");
  // The booking table: full ids, top-down (U5 first in an ascending rack), a dash for no device.
  const size_t reservation_at = all.find(absl::StrCat(kBk4, "  reservation  -"));
  const size_t placement_at = all.find(absl::StrCat(kBk1, "  placement    ", kDev1));
  REQUIRE(reservation_at != std::string::npos);
  REQUIRE(placement_at != std::string::npos);
  CHECK(reservation_at < placement_at);
  CHECK(absl::StrContains(all, absl::StrCat(kBk2, "  blocking     -")));
  CHECK(absl::StrContains(all, "front+rear U2-U3"));

  const std::string svg = RackElevationSvg(rack);
  for (v1::BookingKind kind : {v1::BOOKING_PLACEMENT, v1::BOOKING_BLOCKING, v1::BOOKING_MOVE_HOLD,
                               v1::BOOKING_RESERVATION}) {
    CHECK(absl::StrContains(svg, absl::StrCat("fill=\"", KindFill(kind), "\"")));
    CHECK(absl::StrContains(svg, absl::StrCat(">", KindName(kind), "</text>")));  // legend
  }
  CHECK(absl::StrContains(svg, ">free</text>"));
  CHECK(absl::StrContains(svg, ">…00000301</text>"));
  CHECK(absl::StrContains(svg, ">move → …00000305</text>"));
  CHECK(absl::StrContains(svg, ">blocked · booking …3c4d5e02</text>"));
  CHECK(absl::StrContains(svg, ">reserved · booking …3c4d5e04</text>"));
}

TEST_CASE("the booking colours differ from each other and from free") {
  std::vector<std::string> fills = {kFreeFill};
  for (v1::BookingKind kind : {v1::BOOKING_PLACEMENT, v1::BOOKING_BLOCKING, v1::BOOKING_MOVE_HOLD,
                               v1::BOOKING_RESERVATION}) {
    fills.push_back(KindFill(kind));
  }
  std::sort(fills.begin(), fills.end());
  CHECK(std::unique(fills.begin(), fills.end()) == fills.end());
}

TEST_CASE("labels given for devices replace their short ids") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_FRONT, {7});
  const DeviceLabels labels = {{kDev1, "Dell R650 DL-0001"}};
  CHECK(absl::StrContains(RowOf(RackElevationText(rack, labels), 7), "Dell R650 DL-0001"));
  CHECK(absl::StrContains(RackElevationSvg(rack, labels), ">Dell R650 DL-0001</text>"));
}

TEST_CASE("SVG layout: one row per unit top-down, faces side by side, no rear on an open frame") {
  v1::Rack asc = MakeRack("A", 1, 42, v1::NUMBERING_ASCENDING, true);
  auto top = SvgUnitBox(asc, v1::SIDE_FRONT, 42);
  auto bottom = SvgUnitBox(asc, v1::SIDE_FRONT, 1);
  auto rear_top = SvgUnitBox(asc, v1::SIDE_REAR, 42);
  REQUIRE(top);
  REQUIRE(bottom);
  REQUIRE(rear_top);
  CHECK(bottom->y == top->y + 41 * top->height);
  CHECK(rear_top->y == top->y);
  CHECK(rear_top->x > top->x + top->width);
  CHECK_FALSE(SvgUnitBox(asc, v1::SIDE_FRONT, 0));
  CHECK_FALSE(SvgUnitBox(asc, v1::SIDE_FRONT, 43));

  v1::Rack desc = MakeRack("D", 1, 47, v1::NUMBERING_DESCENDING, true);
  CHECK(SvgUnitBox(desc, v1::SIDE_FRONT, 1)->y < SvgUnitBox(desc, v1::SIDE_FRONT, 47)->y);

  v1::Rack open = MakeRack("O", 0, 24, v1::NUMBERING_ASCENDING, false);
  CHECK_FALSE(SvgUnitBox(open, v1::SIDE_REAR, 5));
  CHECK(SvgUnitBox(open, v1::SIDE_FRONT, 0)->y > SvgUnitBox(open, v1::SIDE_FRONT, 23)->y);
  const std::string svg = RackElevationSvg(open);
  CHECK(absl::StrContains(svg, ">Front</text>"));
  CHECK_FALSE(absl::StrContains(svg, ">Rear</text>"));
  CHECK(absl::StrContains(svg, "open frame, front only"));
}

TEST_CASE("SVG: the rack's name and numbering, every unit number, the name escaped") {
  v1::Rack rack = MakeRack("R&D <lab> \"7\"", 2, 44, v1::NUMBERING_ASCENDING, true);
  const std::string svg = RackElevationSvg(rack);
  CHECK(absl::StrContains(svg, ">R&amp;D &lt;lab&gt; &quot;7&quot;</text>"));
  CHECK_FALSE(absl::StrContains(svg, "<lab>"));
  CHECK(absl::StrContains(svg, "44U · U2 at the bottom, U45 at the top (ascending)"));
  for (int unit = 2; unit <= 45; ++unit) {
    // Once per face.
    const std::string number = absl::StrCat("text-anchor=\"end\" fill=\"#57606a\">", unit, "<");
    size_t count = 0;
    for (size_t at = svg.find(number); at != std::string::npos; at = svg.find(number, at + 1)) {
      ++count;
    }
    CHECK(count == 2);
  }
}

TEST_CASE("a long device label is cut to fit the face") {
  v1::Rack rack = MakeRack("A", 1, 42, v1::NUMBERING_ASCENDING, true);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_FRONT, {1});
  const std::string svg =
      RackElevationSvg(rack, {{kDev1, "Supermicro SuperServer SYS-1029U-TRTP2 serial S12345678"}});
  CHECK(absl::StrContains(svg, ">Supermicro SuperServer SYS-10…</text>"));
}

TEST_CASE("slots outside the rack's geometry are reported, not dropped silently") {
  v1::Rack rack = MakeRack("O", 0, 24, v1::NUMBERING_ASCENDING, false);
  Book(rack, kBk1, v1::BOOKING_PLACEMENT, kDev1, v1::SIDE_REAR, {3});
  Book(rack, kBk2, v1::BOOKING_BLOCKING, "", v1::SIDE_FRONT, {30});
  CHECK(BuildElevation(rack).slots_outside == 2);
  CHECK(absl::StrContains(RackElevationText(rack)[2], "note: 2 booked slot(s) lie outside"));
  CHECK(absl::StrContains(RackElevationSvg(rack), "2 booked slot(s) outside the rack"));
}

TEST_CASE("short ids are the tail of the id") {
  CHECK(ShortId("00000000-0000-4000-8000-000000000301") == "…00000301");
  CHECK(ShortId("abc") == "abc");
}

TEST_CASE("slot ranges: contiguous units joined, sides named, identical sides merged") {
  auto slot = [](v1::Side side, int unit) {
    v1::Slot s;
    s.set_side(side);
    s.set_unit(unit);
    return s;
  };
  CHECK(DescribeSlotRanges({slot(v1::SIDE_FRONT, 10), slot(v1::SIDE_FRONT, 9),
                            slot(v1::SIDE_FRONT, 14)}) == "front U9-U10, U14");
  CHECK(DescribeSlotRanges({slot(v1::SIDE_FRONT, 3), slot(v1::SIDE_REAR, 3)}) ==
        "front+rear U3");
  CHECK(DescribeSlotRanges({slot(v1::SIDE_FRONT, 3), slot(v1::SIDE_REAR, 4)}) ==
        "front U3, rear U4");
}

}  // namespace
}  // namespace dcl::admin
