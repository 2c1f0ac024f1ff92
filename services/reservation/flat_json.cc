#include "services/reservation/flat_json.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"

namespace dcl::reservation {
namespace {

class Reader {
 public:
  explicit Reader(absl::string_view text) : text_(text) {}

  std::optional<std::vector<FlatJsonObject>> Array() {
    std::vector<FlatJsonObject> objects;
    if (!Take('[')) return std::nullopt;
    if (!Take(']')) {
      do {
        FlatJsonObject object;
        if (!Object(&object)) return std::nullopt;
        objects.push_back(std::move(object));
      } while (Take(','));
      if (!Take(']')) return std::nullopt;
    }
    SkipSpace();
    if (at_ != text_.size()) return std::nullopt;  // trailing text
    return objects;
  }

 private:
  void SkipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }

  // The next character after whitespace is `c`: consumed.
  bool Take(char c) {
    SkipSpace();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  bool Object(FlatJsonObject* object) {
    if (!Take('{')) return false;
    if (Take('}')) return true;
    do {
      std::string key;
      FlatJsonValue value;
      SkipSpace();
      if (!String(&key) || !Take(':') || !Scalar(&value)) return false;
      if (!object->emplace(std::move(key), std::move(value)).second) return false;  // duplicate
    } while (Take(','));
    return Take('}');
  }

  bool Literal(absl::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  bool Scalar(FlatJsonValue* value) {
    SkipSpace();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '"') {
      value->kind = FlatJsonValue::Kind::kString;
      return String(&value->text);
    }
    if (c == 't' || c == 'f') {
      value->kind = FlatJsonValue::Kind::kBool;
      value->boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') {
      value->kind = FlatJsonValue::Kind::kNull;
      return Literal("null");
    }
    value->kind = FlatJsonValue::Kind::kNumber;
    return Number(&value->number);
  }

  bool Digits() {
    const size_t start = at_;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
    return at_ > start;
  }

  // JSON's number grammar, checked here; the conversion is absl's.
  bool Number(double* number) {
    const size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    if (at_ < text_.size() && text_[at_] == '0') {
      ++at_;
    } else if (!Digits()) {
      return false;
    }
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (!Digits()) return false;
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (!Digits()) return false;
    }
    return absl::SimpleAtod(text_.substr(start, at_ - start), number) && std::isfinite(*number);
  }

  bool Hex4(uint32_t* unit) {
    if (text_.size() - at_ < 4) return false;
    *unit = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return false;
      }
      *unit = *unit << 4 | digit;
    }
    return true;
  }

  static void AppendUtf8(uint32_t code_point, std::string* out) {
    if (code_point < 0x80) {
      out->push_back(static_cast<char>(code_point));
    } else if (code_point < 0x800) {
      out->push_back(static_cast<char>(0xC0 | code_point >> 6));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else if (code_point < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | code_point >> 12));
      out->push_back(static_cast<char>(0x80 | (code_point >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | code_point >> 18));
      out->push_back(static_cast<char>(0x80 | (code_point >> 12 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code_point >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    }
  }

  // \uXXXX, the backslash and 'u' consumed: one code point, a surrogate pair joined.
  bool UnicodeEscape(std::string* out) {
    uint32_t unit;
    if (!Hex4(&unit)) return false;
    if (unit >= 0xDC00 && unit <= 0xDFFF) return false;  // a low surrogate first
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      uint32_t low;
      if (!Literal("\\u") || !Hex4(&low) || low < 0xDC00 || low > 0xDFFF) return false;
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(unit, out);
    return true;
  }

  // One UTF-8 character at the cursor whose first byte `lead` (>= 0x80) was consumed: its
  // continuation bytes appended, or false for a sequence UTF-8 does not allow (overlong, a
  // surrogate, beyond U+10FFFF, cut short).
  bool Utf8Rest(unsigned char lead, std::string* out) {
    int rest;
    unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) {
      rest = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      rest = 2;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      rest = 3;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (text_.size() - at_ < static_cast<size_t>(rest)) return false;
    out->push_back(static_cast<char>(lead));
    for (int i = 0; i < rest; ++i) {
      const auto byte = static_cast<unsigned char>(text_[at_++]);
      if (byte < (i == 0 ? low : 0x80) || byte > (i == 0 ? high : 0xBF)) return false;
      out->push_back(static_cast<char>(byte));
    }
    return true;
  }

  // A string at the cursor, its escapes decoded, its other characters checked as UTF-8.
  bool String(std::string* out) {
    if (at_ >= text_.size() || text_[at_] != '"') return false;
    ++at_;
    while (at_ < text_.size()) {
      const char c = text_[at_++];
      if (c == '"') return true;
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20) return false;  // JSON escapes control characters
      if (byte >= 0x80) {
        if (!Utf8Rest(byte, out)) return false;
        continue;
      }
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (at_ >= text_.size()) return false;
      switch (text_[at_++]) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u':
          if (!UnicodeEscape(out)) return false;
          break;
        default:
          return false;
      }
    }
    return false;  // unterminated
  }

  absl::string_view text_;
  size_t at_ = 0;
};

}  // namespace

std::optional<std::vector<FlatJsonObject>> ParseFlatJsonObjects(absl::string_view json) {
  return Reader(json).Array();
}

}  // namespace dcl::reservation
