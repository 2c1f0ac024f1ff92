#include "dclctl/format/rack_elevation.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dclctl/format/text_table.h"
#include "services/common/booking_kind.h"

namespace dcl::admin {

std::string ShortId(const std::string& id) {
  if (id.size() <= 8) return id;
  return "…" + id.substr(id.size() - 8);
}

const char* KindName(v1::BookingKind kind) { return BookingKindDisplayName(kind); }

const char* KindFill(v1::BookingKind kind) {
  switch (kind) {
    case v1::BOOKING_PLACEMENT:
      return "#1f6feb";  // blue: a machine is there
    case v1::BOOKING_BLOCKING:
      return "#6e7781";  // grey: space out of service, like a blanking panel
    case v1::BOOKING_MOVE_HOLD:
      return "#8250df";  // purple: held for a machine on its way in
    case v1::BOOKING_RESERVATION:
      return "#e3a008";  // amber: promised, nothing there yet
    default:
      return "#d1242f";  // red: a kind this tool does not know; look closer
  }
}

namespace {

bool Descending(const v1::RackGeometry& g) { return g.numbering() == v1::NUMBERING_DESCENDING; }

int LastUnit(const v1::RackGeometry& g) { return g.first_unit() + g.unit_count() - 1; }

// Text on a fill: dark on amber, white on the rest.
const char* KindInk(v1::BookingKind kind) {
  return kind == v1::BOOKING_RESERVATION ? "#1f2328" : "#ffffff";
}

// The run positions of one face, from the booking ids of its cells in top-down order.
void MarkRuns(std::vector<ElevationRow>& rows, ElevationCell ElevationRow::*face) {
  for (size_t i = 0; i < rows.size(); ++i) {
    ElevationCell& cell = rows[i].*face;
    if (!cell.occupied) continue;
    const bool same_above = i > 0 && (rows[i - 1].*face).occupied &&
                            (rows[i - 1].*face).booking_id == cell.booking_id;
    const bool same_below = i + 1 < rows.size() && (rows[i + 1].*face).occupied &&
                            (rows[i + 1].*face).booking_id == cell.booking_id;
    cell.run = same_above ? (same_below ? RunPosition::kMiddle : RunPosition::kBottom)
                          : (same_below ? RunPosition::kTop : RunPosition::kSingle);
  }
}

std::string NumberingPhrase(const v1::RackGeometry& g) {
  const std::string first = absl::StrCat("U", g.first_unit());
  const std::string last = absl::StrCat("U", LastUnit(g));
  return Descending(g)
             ? absl::StrCat(first, " at the top, ", last, " at the bottom (descending)")
             : absl::StrCat(first, " at the bottom, ", last, " at the top (ascending)");
}

std::string FacesPhrase(const v1::RackGeometry& g) {
  return g.has_rear() ? "front and rear" : "open frame, front only";
}

std::string Label(const std::string& device_id, const DeviceLabels& labels) {
  auto it = labels.find(device_id);
  return it != labels.end() ? it->second : ShortId(device_id);
}

// What a cell or a drawn booking says about itself beyond its kind: its device, or, for a
// booking without one, the booking.
std::string Subject(const ElevationCell& cell, const DeviceLabels& labels) {
  if (!cell.device_id.empty()) return Label(cell.device_id, labels);
  return "booking " + ShortId(cell.booking_id);
}

std::string CellText(const ElevationCell& cell, const DeviceLabels& labels) {
  if (!cell.occupied) return "  ·";
  const char* bracket = "  ";
  switch (cell.run) {
    case RunPosition::kTop:
      bracket = "┌ ";
      break;
    case RunPosition::kMiddle:
      bracket = "│ ";
      break;
    case RunPosition::kBottom:
      bracket = "└ ";
      break;
    case RunPosition::kSingle:
      break;
  }
  return absl::StrCat(bracket, PadRight(KindName(cell.kind), 11), "  ", Subject(cell, labels));
}

// One booking as the rack reports it, gathered from its slots.
struct BookingSummary {
  std::string id;
  v1::BookingKind kind = v1::BOOKING_KIND_UNSPECIFIED;
  std::string device_id;
  std::vector<v1::Slot> slots;
};

// The rack's bookings in the order a reader meets them: by their highest row, front first.
std::vector<BookingSummary> Bookings(const v1::Rack& rack) {
  std::map<int, size_t> row_of_unit;
  const std::vector<int> units = UnitsTopDown(rack.geometry());
  for (size_t i = 0; i < units.size(); ++i) row_of_unit[units[i]] = i;
  std::map<std::string, BookingSummary> by_id;
  std::map<std::string, std::pair<size_t, int>> first_seen;
  for (const v1::ElevationSlot& s : rack.occupied()) {
    BookingSummary& b = by_id[s.booking_id()];
    b.id = s.booking_id();
    b.kind = s.kind();
    b.device_id = s.device_id();
    b.slots.push_back(s.slot());
    auto row = row_of_unit.find(s.slot().unit());
    const std::pair<size_t, int> key{row == row_of_unit.end() ? units.size() : row->second,
                                     static_cast<int>(s.slot().side())};
    auto [it, inserted] = first_seen.emplace(s.booking_id(), key);
    if (!inserted) it->second = std::min(it->second, key);
  }
  std::vector<BookingSummary> out;
  for (auto& [id, b] : by_id) out.push_back(std::move(b));
  std::stable_sort(out.begin(), out.end(), [&](const BookingSummary& a, const BookingSummary& b) {
    return first_seen[a.id] < first_seen[b.id];
  });
  return out;
}

// Contiguous ranges of a sorted list of unit numbers: "U9-U10, U14".
std::string Ranges(std::vector<int> units) {
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  std::vector<std::string> parts;
  for (size_t i = 0; i < units.size();) {
    size_t j = i;
    while (j + 1 < units.size() && units[j + 1] == units[j] + 1) ++j;
    parts.push_back(i == j ? absl::StrCat("U", units[i])
                           : absl::StrCat("U", units[i], "-U", units[j]));
    i = j + 1;
  }
  return absl::StrJoin(parts, ", ");
}

std::string XmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// At most `max_chars` characters on screen, cut with "…" (on a UTF-8 character boundary).
std::string Fit(const std::string& text, size_t max_chars) {
  if (DisplayWidth(text) <= max_chars) return text;
  std::string out;
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool starts_char = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_char && ++chars > max_chars - 1) break;
    out += text[i];
  }
  return out + "…";
}

// The SVG's layout, in pixels.
constexpr int kMargin = 16;
constexpr int kTitleHeight = 78;
constexpr int kFaceHeaderHeight = 22;
constexpr int kUnitHeight = 22;
constexpr int kFaceWidth = 230;
constexpr int kRail = 6;           // the dark frame drawn around each face
constexpr int kNumberColumn = 40;  // unit numbers, left of each face's rail
constexpr int kFaceGap = 20;
constexpr int kLegendItemWidth = 112;
constexpr int kLegendRowHeight = 22;
constexpr size_t kLabelChars = 30;  // what fits across a face at 12 px
constexpr char kFont[] = "DejaVu Sans, Helvetica, Arial, sans-serif";

int FaceX(int face_index) {
  return kMargin + kNumberColumn + face_index * (kFaceWidth + kRail + kFaceGap + kNumberColumn);
}
int RowsTop() { return kMargin + kTitleHeight + kFaceHeaderHeight; }
int FaceCount(const v1::RackGeometry& g) { return g.has_rear() ? 2 : 1; }
// Wide enough for the heading's lines even when an open frame has a single face.
constexpr int kMinWidth = 380;
int SvgWidth(const v1::RackGeometry& g) {
  return std::max(kMinWidth, FaceX(FaceCount(g) - 1) + kFaceWidth + kRail + kMargin);
}

}  // namespace

std::vector<int> UnitsTopDown(const v1::RackGeometry& geometry) {
  std::vector<int> units;
  for (int i = 0; i < geometry.unit_count(); ++i) {
    units.push_back(Descending(geometry) ? geometry.first_unit() + i : LastUnit(geometry) - i);
  }
  return units;
}

Elevation BuildElevation(const v1::Rack& rack) {
  Elevation elevation;
  std::map<int, size_t> row_of_unit;
  for (int unit : UnitsTopDown(rack.geometry())) {
    row_of_unit[unit] = elevation.rows.size();
    elevation.rows.push_back(ElevationRow{unit, {}, {}});
  }
  for (const v1::ElevationSlot& s : rack.occupied()) {
    auto row = row_of_unit.find(s.slot().unit());
    const bool rear = s.slot().side() == v1::SIDE_REAR;
    if (row == row_of_unit.end() || (rear && !rack.geometry().has_rear()) ||
        (!rear && s.slot().side() != v1::SIDE_FRONT)) {
      ++elevation.slots_outside;
      continue;
    }
    ElevationRow& r = elevation.rows[row->second];
    ElevationCell& cell = rear ? r.rear : r.front;
    cell.occupied = true;
    cell.booking_id = s.booking_id();
    cell.kind = s.kind();
    cell.device_id = s.device_id();
  }
  MarkRuns(elevation.rows, &ElevationRow::front);
  MarkRuns(elevation.rows, &ElevationRow::rear);
  return elevation;
}

std::string DescribeSlotRanges(const std::vector<v1::Slot>& slots) {
  std::vector<int> front, rear;
  for (const v1::Slot& s : slots) (s.side() == v1::SIDE_REAR ? rear : front).push_back(s.unit());
  const std::string front_ranges = Ranges(front), rear_ranges = Ranges(rear);
  if (!front.empty() && front_ranges == rear_ranges) return "front+rear " + front_ranges;
  std::vector<std::string> parts;
  if (!front.empty()) parts.push_back("front " + front_ranges);
  if (!rear.empty()) parts.push_back("rear " + rear_ranges);
  return absl::StrJoin(parts, ", ");
}

std::vector<std::string> RackElevationText(const v1::Rack& rack, const DeviceLabels& labels) {
  const v1::RackGeometry& g = rack.geometry();
  const Elevation elevation = BuildElevation(rack);
  std::vector<std::string> lines;
  lines.push_back(absl::StrCat("Rack ", rack.name(), "  (", rack.id(), ")"));
  lines.push_back(absl::StrCat(g.unit_count(), " units, ", NumberingPhrase(g), "; ",
                               FacesPhrase(g)));
  if (elevation.slots_outside > 0) {
    lines.push_back(absl::StrCat("note: ", elevation.slots_outside,
                                 " booked slot(s) lie outside this rack's units or faces"));
  }
  lines.push_back("");

  // Faces at least this wide, so that an empty rack reads like a rack rather than two dots.
  constexpr size_t kFaceColumn = 24;
  std::vector<std::string> header = {"U", PadRight("FRONT", kFaceColumn)};
  if (g.has_rear()) header.push_back(PadRight("REAR", kFaceColumn));
  std::vector<std::vector<std::string>> rows;
  int free_front = 0, free_rear = 0;
  for (const ElevationRow& row : elevation.rows) {
    std::vector<std::string> cells = {absl::StrCat(row.unit), CellText(row.front, labels)};
    if (g.has_rear()) cells.push_back(CellText(row.rear, labels));
    free_front += row.front.occupied ? 0 : 1;
    free_rear += row.rear.occupied ? 0 : 1;
    rows.push_back(std::move(cells));
  }
  // Unit numbers right-aligned, as on a rack's rail.
  for (std::string& line : FormatTable(header, rows, {0})) lines.push_back(" " + line);
  lines.push_back("");
  lines.push_back(g.has_rear() ? absl::StrCat("free: ", free_front, " of ", g.unit_count(),
                                              " units on the front, ", free_rear, " on the rear")
                               : absl::StrCat("free: ", free_front, " of ", g.unit_count(),
                                              " units"));
  const std::vector<BookingSummary> bookings = Bookings(rack);
  if (!bookings.empty()) {
    lines.push_back("");
    std::vector<std::vector<std::string>> booking_rows;
    for (const BookingSummary& b : bookings) {
      booking_rows.push_back({b.id, KindName(b.kind), b.device_id.empty() ? "-" : b.device_id,
                              DescribeSlotRanges(b.slots)});
    }
    for (std::string& line : FormatTable({"BOOKING", "KIND", "DEVICE", "SLOTS"}, booking_rows)) {
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

std::optional<SvgBox> SvgUnitBox(const v1::Rack& rack, v1::Side side, int unit) {
  const v1::RackGeometry& g = rack.geometry();
  if (side != v1::SIDE_FRONT && !(side == v1::SIDE_REAR && g.has_rear())) return std::nullopt;
  const std::vector<int> units = UnitsTopDown(g);
  auto it = std::find(units.begin(), units.end(), unit);
  if (it == units.end()) return std::nullopt;
  const int row = static_cast<int>(it - units.begin());
  return SvgBox{FaceX(side == v1::SIDE_REAR ? 1 : 0), RowsTop() + row * kUnitHeight, kFaceWidth,
                kUnitHeight};
}

std::string RackElevationSvg(const v1::Rack& rack, const DeviceLabels& labels) {
  const v1::RackGeometry& g = rack.geometry();
  const Elevation elevation = BuildElevation(rack);
  const int width = SvgWidth(g);
  const int rows_bottom = RowsTop() + g.unit_count() * kUnitHeight;
  const std::vector<v1::BookingKind> legend_kinds = {v1::BOOKING_PLACEMENT, v1::BOOKING_BLOCKING,
                                                     v1::BOOKING_MOVE_HOLD,
                                                     v1::BOOKING_RESERVATION};
  const int legend_items = static_cast<int>(legend_kinds.size()) + 1;  // and "free"
  const int per_legend_row = std::max(1, (width - 2 * kMargin) / kLegendItemWidth);
  const int legend_rows = (legend_items + per_legend_row - 1) / per_legend_row;
  const int legend_top = rows_bottom + kRail + 18;
  const int height = legend_top + legend_rows * kLegendRowHeight + kMargin;

  std::string svg;
  absl::StrAppend(&svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", width, "\" height=\"",
                  height, "\" viewBox=\"0 0 ", width, " ", height, "\" font-family=\"", kFont,
                  "\">\n");
  absl::StrAppend(&svg, "<title>Rack ", XmlEscape(rack.name()), "</title>\n");
  absl::StrAppend(&svg, "<rect x=\"0\" y=\"0\" width=\"", width, "\" height=\"", height,
                  "\" fill=\"#ffffff\"/>\n");
  // Heading: the name, then the numbering and the faces.
  absl::StrAppend(&svg, "<text x=\"", kMargin, "\" y=\"", kMargin + 20,
                  "\" font-size=\"18\" font-weight=\"bold\" fill=\"#1f2328\">",
                  XmlEscape(Fit(rack.name(), static_cast<size_t>((width - 2 * kMargin) / 12))),
                  "</text>\n");
  absl::StrAppend(&svg, "<text x=\"", kMargin, "\" y=\"", kMargin + 38,
                  "\" font-size=\"11\" fill=\"#57606a\">", g.unit_count(), "U · ",
                  XmlEscape(NumberingPhrase(g)), "</text>\n");
  std::string faces_line = FacesPhrase(g);
  if (elevation.slots_outside > 0) {
    absl::StrAppend(&faces_line, " · ", elevation.slots_outside,
                    " booked slot(s) outside the rack");
  }
  absl::StrAppend(&svg, "<text x=\"", kMargin, "\" y=\"", kMargin + 53,
                  "\" font-size=\"11\" fill=\"#57606a\">", XmlEscape(faces_line), "</text>\n");
  absl::StrAppend(&svg, "<text x=\"", kMargin, "\" y=\"", kMargin + 68,
                  "\" font-size=\"11\" fill=\"#57606a\">rack ", XmlEscape(rack.id()),
                  "</text>\n");

  for (int face = 0; face < FaceCount(g); ++face) {
    const bool rear = face == 1;
    const int x = FaceX(face);
    ElevationCell ElevationRow::*cell_of = rear ? &ElevationRow::rear : &ElevationRow::front;
    absl::StrAppend(&svg, "<g class=\"face\" id=\"", rear ? "rear" : "front", "\">\n");
    absl::StrAppend(&svg, "<text x=\"", x + kFaceWidth / 2, "\" y=\"", RowsTop() - kRail - 6,
                    "\" font-size=\"13\" font-weight=\"bold\" text-anchor=\"middle\" "
                    "fill=\"#1f2328\">",
                    rear ? "Rear" : "Front", "</text>\n");
    // The frame: dark rails around the face.
    absl::StrAppend(&svg, "<rect x=\"", x - kRail, "\" y=\"", RowsTop() - kRail, "\" width=\"",
                    kFaceWidth + 2 * kRail, "\" height=\"", g.unit_count() * kUnitHeight + 2 * kRail,
                    "\" fill=\"#2d333b\" rx=\"2\"/>\n");
    for (size_t i = 0; i < elevation.rows.size(); ++i) {
      const int y = RowsTop() + static_cast<int>(i) * kUnitHeight;
      absl::StrAppend(&svg, "<rect x=\"", x, "\" y=\"", y, "\" width=\"", kFaceWidth,
                      "\" height=\"", kUnitHeight, "\" fill=\"", kFreeFill,
                      "\" stroke=\"#d0d7de\" stroke-width=\"1\"/>\n");
      absl::StrAppend(&svg, "<text x=\"", x - kRail - 5, "\" y=\"", y + 15,
                      "\" font-size=\"11\" text-anchor=\"end\" fill=\"#57606a\">",
                      elevation.rows[i].unit, "</text>\n");
    }
    // Each booking across its run of rows.
    for (size_t i = 0; i < elevation.rows.size(); ++i) {
      const ElevationCell& cell = elevation.rows[i].*cell_of;
      if (!cell.occupied || (cell.run != RunPosition::kSingle && cell.run != RunPosition::kTop)) {
        continue;
      }
      size_t last = i;
      while (last + 1 < elevation.rows.size() && (elevation.rows[last + 1].*cell_of).occupied &&
             (elevation.rows[last + 1].*cell_of).booking_id == cell.booking_id) {
        ++last;
      }
      const int top = RowsTop() + static_cast<int>(i) * kUnitHeight;
      const int run_height = static_cast<int>(last - i + 1) * kUnitHeight;
      std::string label;
      switch (cell.kind) {
        case v1::BOOKING_PLACEMENT:
          label = Subject(cell, labels);
          break;
        case v1::BOOKING_MOVE_HOLD:
          label = cell.device_id.empty() ? "move hold" : "move → " + Label(cell.device_id, labels);
          break;
        case v1::BOOKING_RESERVATION:
          label = "reserved · " + Subject(cell, labels);
          break;
        case v1::BOOKING_BLOCKING:
          label = "blocked · " + Subject(cell, labels);
          break;
        default:
          label = "unknown kind · " + Subject(cell, labels);
      }
      const int top_unit = elevation.rows[i].unit, bottom_unit = elevation.rows[last].unit;
      const std::string units = top_unit == bottom_unit
                                    ? absl::StrCat("U", top_unit)
                                    : absl::StrCat("U", std::min(top_unit, bottom_unit), "-U",
                                                   std::max(top_unit, bottom_unit));
      absl::StrAppend(&svg, "<g class=\"booking\">\n<title>", KindName(cell.kind), " ",
                      XmlEscape(units), " ", rear ? "rear" : "front", " · booking ",
                      XmlEscape(cell.booking_id));
      if (!cell.device_id.empty()) {
        absl::StrAppend(&svg, " · device ", XmlEscape(cell.device_id));
      }
      absl::StrAppend(&svg, "</title>\n");
      absl::StrAppend(&svg, "<rect x=\"", x + 1, "\" y=\"", top + 1, "\" width=\"",
                      kFaceWidth - 2, "\" height=\"", run_height - 2, "\" rx=\"3\" fill=\"",
                      KindFill(cell.kind),
                      "\" stroke=\"#1f2328\" stroke-opacity=\"0.35\" stroke-width=\"1\"/>\n");
      absl::StrAppend(&svg, "<text x=\"", x + kFaceWidth / 2, "\" y=\"", top + run_height / 2 + 4,
                      "\" font-size=\"12\" text-anchor=\"middle\" fill=\"", KindInk(cell.kind),
                      "\">", XmlEscape(Fit(label, kLabelChars)), "</text>\n</g>\n");
    }
    absl::StrAppend(&svg, "</g>\n");
  }

  // The legend: every booking kind and free, in rows as wide as the picture allows.
  for (int item = 0; item < legend_items; ++item) {
    const int x = kMargin + (item % per_legend_row) * kLegendItemWidth;
    const int y = legend_top + (item / per_legend_row) * kLegendRowHeight;
    const bool free = item == legend_items - 1;
    absl::StrAppend(&svg, "<rect x=\"", x, "\" y=\"", y, "\" width=\"14\" height=\"14\" rx=\"2\" "
                    "fill=\"", free ? kFreeFill : KindFill(legend_kinds[item]),
                    "\" stroke=\"#8c959f\" stroke-width=\"1\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", x + 20, "\" y=\"", y + 11,
                    "\" font-size=\"11\" fill=\"#1f2328\">",
                    free ? "free" : KindName(legend_kinds[item]), "</text>\n");
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace dcl::admin
