// The SVG elevation as pixels: rendered to PNG by Debian's rsvg-convert (what a browser or an
// image viewer would show) and read back with libpng. Every unit of every face is looked at
// where the picture draws it: a unit the rack says is booked shows its kind's colour, every
// other unit shows the free colour. Where a unit sits is checked against the rack's numbering
// itself (an ascending rack has its first unit at the bottom), not only against the layout the
// renderer reports. The PNGs are kept in the test's undeclared outputs for a human to look at.
#include <png.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dclctl/format/rack_elevation.h"
#include "tests/admin/rack_test_racks.h"
#include "tests/support/child_process.h"

namespace dcl::admin {
namespace {

using testing::Book;
using testing::MakeRack;

struct Rgb {
  int r = 0, g = 0, b = 0;
};

Rgb ParseHex(const std::string& hex) {  // "#rrggbb"
  return Rgb{std::stoi(hex.substr(1, 2), nullptr, 16), std::stoi(hex.substr(3, 2), nullptr, 16),
             std::stoi(hex.substr(5, 2), nullptr, 16)};
}

bool Near(const Rgb& a, const Rgb& b) {
  return std::abs(a.r - b.r) <= 3 && std::abs(a.g - b.g) <= 3 && std::abs(a.b - b.b) <= 3;
}

std::string Hex(const Rgb& c) {
  char out[8];
  std::snprintf(out, sizeof out, "#%02x%02x%02x", c.r, c.g, c.b);
  return out;
}

// A decoded PNG, 8-bit RGBA.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<unsigned char> rgba;
  Rgb At(int x, int y) const {
    const size_t i = (static_cast<size_t>(y) * width + x) * 4;
    return Rgb{rgba[i], rgba[i + 1], rgba[i + 2]};
  }
};

Image ReadPng(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  REQUIRE(png_image_begin_read_from_file(&image, path.c_str()) != 0);
  image.format = PNG_FORMAT_RGBA;
  Image out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgba.resize(PNG_IMAGE_SIZE(image));
  REQUIRE(png_image_finish_read(&image, nullptr, out.rgba.data(), 0, nullptr) != 0);
  return out;
}

std::string OutputDir() {
  for (const char* var : {"TEST_UNDECLARED_OUTPUTS_DIR", "TEST_TMPDIR"}) {
    if (const char* dir = std::getenv(var); dir != nullptr && *dir != '\0') return dir;
  }
  return "/tmp";
}

// Writes the SVG, renders it with rsvg-convert at 1 px per SVG unit, decodes the PNG.
Image Render(const v1::Rack& rack, const std::string& name) {
  const std::string svg_path = OutputDir() + "/" + name + ".svg";
  const std::string png_path = OutputDir() + "/" + name + ".png";
  std::ofstream(svg_path) << RackElevationSvg(rack);
  dcl::testing::ChildProcess rsvg("/usr/bin/rsvg-convert",
                                  {"--format=png", "--output=" + png_path, svg_path});
  const std::optional<int> exit = rsvg.WaitForExit(std::chrono::seconds(60));
  INFO(rsvg.Log());
  REQUIRE(exit == std::optional<int>(0));
  return ReadPng(png_path);
}

// The colour drawn for one unit of one face, sampled in the left part of its box (away from the
// centred label and the box's edges).
Rgb UnitColour(const Image& image, const v1::Rack& rack, v1::Side side, int unit) {
  const std::optional<SvgBox> box = SvgUnitBox(rack, side, unit);
  REQUIRE(box);
  REQUIRE(box->x + 6 < image.width);
  REQUIRE(box->y + box->height / 2 < image.height);
  return image.At(box->x + 6, box->y + box->height / 2);
}

// Checks every unit of every face of `rack` in `image` against `expected` ((side, unit) →
// kind); a unit not in it must be free.
void CheckEveryUnit(const Image& image, const v1::Rack& rack,
                    const std::map<std::pair<v1::Side, int>, v1::BookingKind>& expected) {
  const v1::RackGeometry& g = rack.geometry();
  std::vector<v1::Side> sides = {v1::SIDE_FRONT};
  if (g.has_rear()) sides.push_back(v1::SIDE_REAR);
  for (v1::Side side : sides) {
    for (int unit = g.first_unit(); unit < g.first_unit() + g.unit_count(); ++unit) {
      auto it = expected.find({side, unit});
      const Rgb want = ParseHex(it == expected.end() ? kFreeFill : KindFill(it->second));
      const Rgb got = UnitColour(image, rack, side, unit);
      INFO((side == v1::SIDE_FRONT ? "front U" : "rear U")
           << unit << ": want " << Hex(want) << " ("
           << (it == expected.end() ? "free" : KindName(it->second)) << "), got " << Hex(got));
      CHECK(Near(got, want));
    }
  }
}

TEST_CASE("ascending rack as pixels: every kind where the rack says, the rest free, U1 at the bottom") {
  v1::Rack rack = MakeRack("FRA1-A01", 1, 42, v1::NUMBERING_ASCENDING, true);
  // A full-depth 2U server, a half-depth switch on the rear, a block of both sides, a move hold,
  // a reservation of front units.
  Book(rack, "b-place", v1::BOOKING_PLACEMENT, "00000000-0000-4000-8000-000000000305",
       v1::SIDE_UNSPECIFIED, {9, 10});
  Book(rack, "b-switch", v1::BOOKING_PLACEMENT, "00000000-0000-4000-8000-000000000309",
       v1::SIDE_REAR, {42});
  Book(rack, "b-block", v1::BOOKING_BLOCKING, "", v1::SIDE_UNSPECIFIED, {20, 21, 22});
  Book(rack, "b-hold", v1::BOOKING_MOVE_HOLD, "00000000-0000-4000-8000-000000000301",
       v1::SIDE_UNSPECIFIED, {30});
  Book(rack, "b-res", v1::BOOKING_RESERVATION, "", v1::SIDE_FRONT, {1, 2, 3, 4});
  const Image image = Render(rack, "ascending");

  std::map<std::pair<v1::Side, int>, v1::BookingKind> expected;
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    for (int u : {9, 10}) expected[{side, u}] = v1::BOOKING_PLACEMENT;
    for (int u : {20, 21, 22}) expected[{side, u}] = v1::BOOKING_BLOCKING;
    expected[{side, 30}] = v1::BOOKING_MOVE_HOLD;
  }
  expected[{v1::SIDE_REAR, 42}] = v1::BOOKING_PLACEMENT;
  for (int u : {1, 2, 3, 4}) expected[{v1::SIDE_FRONT, u}] = v1::BOOKING_RESERVATION;
  CheckEveryUnit(image, rack, expected);

  // The numbering, checked against the picture rather than the layout function: U1 is the
  // lowest row of the front face, with the reservation's amber; the row above the face's top
  // unit is not a unit.
  const SvgBox u1 = *SvgUnitBox(rack, v1::SIDE_FRONT, 1);
  const SvgBox u42 = *SvgUnitBox(rack, v1::SIDE_FRONT, 42);
  CHECK(u1.y == u42.y + 41 * u42.height);
  CHECK(Near(image.At(u1.x + 6, u1.y + u1.height + 3), ParseHex("#2d333b")));  // the frame
  CHECK_FALSE(Near(image.At(u42.x + 6, u42.y - 3), ParseHex(kFreeFill)));
}

TEST_CASE("descending rack as pixels: U1 at the top, a 2U device over U9 and U10") {
  v1::Rack rack = MakeRack("FRA1-A02", 1, 47, v1::NUMBERING_DESCENDING, true);
  Book(rack, "b1", v1::BOOKING_PLACEMENT, "00000000-0000-4000-8000-000000000306",
       v1::SIDE_UNSPECIFIED, {9, 10});
  Book(rack, "b2", v1::BOOKING_RESERVATION, "", v1::SIDE_UNSPECIFIED, {1});
  const Image image = Render(rack, "descending");
  std::map<std::pair<v1::Side, int>, v1::BookingKind> expected;
  for (v1::Side side : {v1::SIDE_FRONT, v1::SIDE_REAR}) {
    expected[{side, 9}] = expected[{side, 10}] = v1::BOOKING_PLACEMENT;
    expected[{side, 1}] = v1::BOOKING_RESERVATION;
  }
  CheckEveryUnit(image, rack, expected);
  CHECK(SvgUnitBox(rack, v1::SIDE_FRONT, 1)->y < SvgUnitBox(rack, v1::SIDE_FRONT, 2)->y);
}

TEST_CASE("open frame from U0 as pixels: a front face only, nothing drawn where a rear would be") {
  v1::Rack rack = MakeRack("FRA1-OF1", 0, 24, v1::NUMBERING_ASCENDING, false);
  Book(rack, "b1", v1::BOOKING_PLACEMENT, "00000000-0000-4000-8000-000000000307", v1::SIDE_FRONT,
       {0});
  Book(rack, "b2", v1::BOOKING_BLOCKING, "", v1::SIDE_FRONT, {23});
  const Image image = Render(rack, "open_frame");
  CheckEveryUnit(image, rack,
                 {{{v1::SIDE_FRONT, 0}, v1::BOOKING_PLACEMENT},
                  {{v1::SIDE_FRONT, 23}, v1::BOOKING_BLOCKING}});
  const SvgBox front = *SvgUnitBox(rack, v1::SIDE_FRONT, 12);
  // Right of the front face's frame there is only the white page.
  CHECK(image.width < front.x + 2 * front.width);
  CHECK(Near(image.At(image.width - 3, front.y + 5), Rgb{255, 255, 255}));
}

}  // namespace
}  // namespace dcl::admin
