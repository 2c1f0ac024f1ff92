// A rack's elevation as DC staff read it: one row per unit from the top of the rack down, in the
// rack's own numbering (an ascending rack starts at its highest unit, a descending one at its
// first), with the front face and, where the rack has one, the rear face. Two renderings of the
// same rows: text lines for a terminal (`dclctl rack show`) and an SVG picture in the manner of
// NetBox's rack elevations (`dclctl rack show --svg`).
//
// Pure: a v1::Rack (what GetRack returns) in, strings out; no gRPC, no files. The SVG's layout is
// public (SvgUnitBox) so that a test can look at the rendered pixels where a unit is drawn.
#ifndef DCL_DCLCTL_FORMAT_RACK_ELEVATION_H_
#define DCL_DCLCTL_FORMAT_RACK_ELEVATION_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dcl/v1/common.pb.h"
#include "dcl/v1/occupancy.pb.h"

namespace dcl::admin {

// Readable names for devices, by device id (e.g. "Dell R650 DL-0001" once an inventory is at
// hand). A device without an entry is shown by its ShortId.
using DeviceLabels = std::map<std::string, std::string>;

// The last 8 characters of an id, after an ellipsis: "…00000301". The tail rather than the head,
// because the random bits of a v4 UUID are spread over all of it while ids that are fixed or
// issued in sequence (demo data, imports) differ only at the end.
std::string ShortId(const std::string& id);

// "placement", "blocking", "move hold", "reservation"; "unknown" for anything else (the display
// names of services/common/booking_kind.h).
const char* KindName(v1::BookingKind kind);

// The rack's units in the order a person reads the rack: from the top unit down.
std::vector<int> UnitsTopDown(const v1::RackGeometry& geometry);

// Where a cell sits in a run of rows of one booking on one face (a 2U device: top, bottom).
enum class RunPosition { kSingle, kTop, kMiddle, kBottom };

struct ElevationCell {
  bool occupied = false;
  std::string booking_id;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device_id;
  RunPosition run = RunPosition::kSingle;
};

struct ElevationRow {
  int unit = 0;
  ElevationCell front;
  ElevationCell rear;  // never occupied on an open frame
};

struct Elevation {
  std::vector<ElevationRow> rows;  // top-down, one per unit of the rack
  // Slots GetRack reported that this geometry has no room for (a unit outside the rack, a rear
  // slot on an open frame). The server's planner prevents them; the renderers still say so
  // rather than drop them silently.
  int slots_outside = 0;
};

Elevation BuildElevation(const v1::Rack& rack);

// The terminal rendering: a heading, the unit rows with FRONT and REAR columns (FRONT only on an
// open frame), each occupied cell with its booking's kind and its device (or, without a device,
// its booking), then a table of the bookings with their full ids and their slots.
std::vector<std::string> RackElevationText(const v1::Rack& rack, const DeviceLabels& labels = {});

// The picture: the rack's name and numbering, the faces side by side (front only on an open
// frame), one row per unit numbered in the rack's own numbering, each booking drawn across its
// units in the colour of its kind with its device's label, and a legend of the colours.
std::string RackElevationSvg(const v1::Rack& rack, const DeviceLabels& labels = {});

// Fill colours (#rrggbb) of the SVG.
const char* KindFill(v1::BookingKind kind);
inline constexpr char kFreeFill[] = "#f4f5f7";

// The rectangle (SVG user units = pixels at 96 dpi) in which the SVG draws one unit of one face;
// nullopt for a unit outside the rack or the rear of an open frame.
struct SvgBox {
  int x = 0;
  int y = 0;
  int width = 0;
  int height = 0;
};
std::optional<SvgBox> SvgUnitBox(const v1::Rack& rack, v1::Side side, int unit);

// The ranges of units of some slots, per side: "front U9-U10, rear U9-U10"; when both sides
// hold the same ranges, "front+rear U9-U10".
std::string DescribeSlotRanges(const std::vector<v1::Slot>& slots);

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_FORMAT_RACK_ELEVATION_H_
