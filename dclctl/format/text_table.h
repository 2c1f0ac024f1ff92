// Plain text tables for a terminal: columns padded to their widest cell, measured in characters
// on screen (UTF-8 code points) rather than bytes, so that "…" and box-drawing glyphs align.
#ifndef DCL_DCLCTL_FORMAT_TEXT_TABLE_H_
#define DCL_DCLCTL_FORMAT_TEXT_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace dcl::admin {

// The number of characters `text` takes on a terminal: its UTF-8 code points (every glyph dcl
// prints is one column wide).
size_t DisplayWidth(const std::string& text);

// `text` followed by spaces up to `width` display columns (never cut).
std::string PadRight(const std::string& text, size_t width);
std::string PadLeft(const std::string& text, size_t width);

// A header line and one line per row, columns separated by two spaces, trailing blanks trimmed.
// Rows shorter than the header are padded with empty cells. Columns whose index is in
// `right_aligned` are aligned right (numbers).
std::vector<std::string> FormatTable(const std::vector<std::string>& header,
                                     const std::vector<std::vector<std::string>>& rows,
                                     const std::vector<size_t>& right_aligned = {});

}  // namespace dcl::admin

#endif  // DCL_DCLCTL_FORMAT_TEXT_TABLE_H_
