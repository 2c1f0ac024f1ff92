#include "dclctl/format/text_table.h"

#include <algorithm>

namespace dcl::admin {

size_t DisplayWidth(const std::string& text) {
  // Continuation bytes (10xxxxxx) do not start a character.
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string PadRight(const std::string& text, size_t width) {
  const size_t used = DisplayWidth(text);
  return used >= width ? text : text + std::string(width - used, ' ');
}

std::string PadLeft(const std::string& text, size_t width) {
  const size_t used = DisplayWidth(text);
  return used >= width ? text : std::string(width - used, ' ') + text;
}

namespace {

std::string TrimRight(std::string line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

}  // namespace

std::vector<std::string> FormatTable(const std::vector<std::string>& header,
                                     const std::vector<std::vector<std::string>>& rows,
                                     const std::vector<size_t>& right_aligned) {
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], DisplayWidth(cells[i]));
    }
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  auto render = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string& cell = i < cells.size() ? cells[i] : std::string();
      const bool right = std::find(right_aligned.begin(), right_aligned.end(), i) !=
                         right_aligned.end();
      line += right ? PadLeft(cell, widths[i]) : PadRight(cell, widths[i]);
    }
    return TrimRight(line);
  };
  std::vector<std::string> lines;
  lines.push_back(render(header));
  for (const auto& row : rows) lines.push_back(render(row));
  return lines;
}

}  // namespace dcl::admin
