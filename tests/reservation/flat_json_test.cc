// The refusal explanation's JSON reader (services/reservation/flat_json.h): examples, refusals,
// and a comparison with protobuf's JSON reader (what the server used before) on generated and
// corrupted texts. No database.
#include "services/reservation/flat_json.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dcl::reservation {
namespace {

using Kind = FlatJsonValue::Kind;

TEST_CASE("flat JSON: the shape dcl_reserve_call answers, as PostgreSQL writes jsonb") {
  const auto objects = ParseFlatJsonObjects(
      R"([{"held": true, "bound": false, "model": "R650", "vendor": "Dell", "devices": 10, )"
      R"("first_ids": "a,b", "ordinality": 1, "at_asked_site": true, "process_state": "normal", )"
      R"("decommissioned": false, "hardware_profile": ""}, {"at_asked_site": null, "devices": 0}])");
  REQUIRE(objects);
  REQUIRE(objects->size() == 2);
  const FlatJsonObject& first = (*objects)[0];
  CHECK(first.at("held").kind == Kind::kBool);
  CHECK(first.at("held").boolean);
  CHECK_FALSE(first.at("bound").boolean);
  CHECK(first.at("vendor").text == "Dell");
  CHECK(first.at("devices").kind == Kind::kNumber);
  CHECK(first.at("devices").number == 10);
  CHECK(first.at("hardware_profile").kind == Kind::kString);
  CHECK(first.at("hardware_profile").text.empty());
  CHECK((*objects)[1].at("at_asked_site").kind == Kind::kNull);
  CHECK(ParseFlatJsonObjects("[]")->empty());
  CHECK(ParseFlatJsonObjects(" [ { } ] ")->size() == 1);
}

TEST_CASE("flat JSON: escapes decode to the characters they name, surrogate pairs joined") {
  const auto objects = ParseFlatJsonObjects(
      R"([{"v": "q\" b\\ s\/ \b\f\n\r\t \u00e9 \u4e2d \ud83d\ude00 \u0041", "raw": "é中😀"}])");
  REQUIRE(objects);
  CHECK((*objects)[0].at("v").text == "q\" b\\ s/ \b\f\n\r\t é 中 😀 A");
  CHECK((*objects)[0].at("raw").text == "é中😀");
}

TEST_CASE("flat JSON: numbers by JSON's grammar") {
  for (const auto& [text, value] : std::vector<std::pair<std::string, double>>{
           {"0", 0}, {"-0", 0}, {"7", 7}, {"-12.5", -12.5}, {"1e3", 1000}, {"2E-2", 0.02},
           {"9007199254740993", 9007199254740992.0}}) {
    const auto objects = ParseFlatJsonObjects("[{\"n\": " + text + "}]");
    INFO(text);
    REQUIRE(objects);
    CHECK((*objects)[0].at("n").number == value);
  }
  for (const std::string text : {"01", "+1", "1.", ".5", "1e", "1e+", "-", "0x10", "1e999",
                                 "NaN", "Infinity", "-Infinity"}) {
    INFO(text);
    CHECK_FALSE(ParseFlatJsonObjects("[{\"n\": " + text + "}]"));
  }
}

TEST_CASE("flat JSON: every other shape is refused, not guessed") {
  for (const std::string text : {
           "", " ", "{}", "[", "]", "[{]", "[{}", "[{},]", "[,{}]", "[{}]x", "[{}] []", "[1]",
           "[\"a\"]", "[null]", "[[]]", R"([{"a": {}}])", R"([{"a": []}])", R"([{"a": 1,}])",
           R"([{"a" 1}])", R"([{a: 1}])", R"([{"a": 1 "b": 2}])", R"([{"a": 1, "a": 2}])",
           R"([{"a": tru}])", R"([{"a": True}])", R"([{"a": nul}])", R"([{"a": 'x'}])",
           "[{\"a\": \"x\ny\"}]", "[{\"a\": \"x\ty\"}]", R"([{"a": "x)", R"([{"a": "\x"}])",
           R"([{"a": "\u12"}])", R"([{"a": "\u12g4"}])", R"([{"a": "\ud83d"}])",
           R"([{"a": "\ud83d\u0041"}])", R"([{"a": "\ude00"}])", R"([{"a": "\"}])"}) {
    INFO(text);
    CHECK_FALSE(ParseFlatJsonObjects(text));
  }
}

TEST_CASE("flat JSON: a string's bytes must be UTF-8") {
  CHECK(ParseFlatJsonObjects("[{\"a\": \"\xC2\x80 \xE0\xA0\x80 \xED\x9F\xBF \xF0\x90\x80\x80 "
                             "\xF4\x8F\xBF\xBF\"}]"));
  for (const std::string bytes : {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xC3", "\xC3x",
                                  "\xE0\x80\x80", "\xE0\x9F\xBF", "\xED\xA0\x80",
                                  "\xED\xBF\xBF", "\xE4\xB8", "\xF0\x80\x80\x80",
                                  "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
                                  "\xFF", "\xE4\xB8\x41"}) {
    INFO("bytes of " << bytes.size());
    CHECK_FALSE(ParseFlatJsonObjects("[{\"a\": \"" + bytes + "\"}]"));
  }
}

// protobuf's reader as the reference: what the server decoded before this reader.
std::optional<google::protobuf::ListValue> ParseWithProtobuf(const std::string& text) {
  google::protobuf::ListValue list;
  if (!google::protobuf::util::JsonStringToMessage(text, &list).ok()) return std::nullopt;
  return list;
}

// Both readers read `text` alike: the same objects, keys, kinds and values.
void CheckSameAsProtobuf(const std::vector<FlatJsonObject>& ours,
                         const google::protobuf::ListValue& reference) {
  using google::protobuf::Value;
  REQUIRE(ours.size() == static_cast<size_t>(reference.values_size()));
  for (size_t i = 0; i < ours.size(); ++i) {
    REQUIRE(reference.values(i).kind_case() == Value::kStructValue);
    const auto& fields = reference.values(i).struct_value().fields();
    REQUIRE(ours[i].size() == fields.size());
    for (const auto& [key, value] : ours[i]) {
      INFO(key);
      const auto it = fields.find(key);
      REQUIRE(it != fields.end());
      switch (value.kind) {
        case Kind::kNull:
          CHECK(it->second.kind_case() == Value::kNullValue);
          break;
        case Kind::kBool:
          REQUIRE(it->second.kind_case() == Value::kBoolValue);
          CHECK(it->second.bool_value() == value.boolean);
          break;
        case Kind::kNumber:
          REQUIRE(it->second.kind_case() == Value::kNumberValue);
          CHECK(it->second.number_value() == value.number);
          break;
        case Kind::kString:
          REQUIRE(it->second.kind_case() == Value::kStringValue);
          CHECK(it->second.string_value() == value.text);
          break;
      }
    }
  }
}

// A random text of the accepted shape, its strings written with every kind of escape.
class TextGenerator {
 public:
  explicit TextGenerator(uint32_t seed) : random_(seed) {}

  std::string Array() {
    std::string out = Space() + "[";
    const int objects = Pick(4);
    for (int o = 0; o < objects; ++o) {
      if (o > 0) out += Space() + ",";
      out += Space() + "{";
      const int fields = Pick(5);
      for (int f = 0; f < fields; ++f) {
        if (f > 0) out += Space() + ",";
        // Distinct keys: a field's index is part of its key.
        out += Space() + "\"k" + std::to_string(f) + String().substr(1) + Space() + ":" +
               Space() + Value();
      }
      out += Space() + "}";
    }
    return out + Space() + "]" + Space();
  }

 private:
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n)(random_); }

  std::string Space() {
    static const char* const kSpaces[] = {"", "", " ", "\n", "\t ", "\r\n  "};
    return kSpaces[Pick(5)];
  }

  std::string Value() {
    static const char* const kNumbers[] = {"0",     "-0",        "42",        "-7",
                                           "3.25",  "1e3",       "-2.5E-3",   "1234567890123",
                                           "0.001", "6.02e+23"};
    switch (Pick(5)) {
      case 0:
        return "null";
      case 1:
        return "true";
      case 2:
        return "false";
      case 3:
        return kNumbers[Pick(9)];
      default:
        return String();
    }
  }

  static std::string Hex4(uint32_t unit) {
    static const char* const kDigits[] = {"0123456789abcdef", "0123456789ABCDEF"};
    const char* digits = kDigits[unit & 1];
    std::string out = "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[unit >> shift & 0xF];
    return out;
  }

  static std::string Utf8(uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | cp >> 6);
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | cp >> 12);
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | cp >> 18);
      out += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
  }

  // A quoted string of random characters, each written raw or escaped.
  std::string String() {
    static const uint32_t kCodePoints[] = {'a',  'Z',  '0',    ',',    ' ',    '"',     '\\',
                                           '/',  '\b', '\f',   '\n',   '\r',   '\t',    0x01,
                                           0x1F, 0x7F, 0xE9,   0x4E2D, 0xFFFD, 0x1F600, 0x10FFFF};
    std::string out = "\"";
    const int length = Pick(8);
    for (int i = 0; i < length; ++i) {
      const uint32_t cp = kCodePoints[Pick(20)];
      const bool must_escape = cp < 0x20 || cp == '"' || cp == '\\';
      if (!must_escape && Pick(1) == 0) {
        out += Utf8(cp);
      } else if (cp == '"' || cp == '\\' || cp == '/') {
        out += Pick(1) == 0 ? std::string("\\") + static_cast<char>(cp) : Hex4(cp);
      } else if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        out += Hex4(0xD800 + (v >> 10)) + Hex4(0xDC00 + (v & 0x3FF));
      } else {
        out += Hex4(cp);
      }
    }
    return out + "\"";
  }

  std::mt19937 random_;
};

TEST_CASE("flat JSON: generated texts read as protobuf's reader reads them") {
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    const std::string text = TextGenerator(seed).Array();
    INFO("seed " << seed << ": " << text);
    const auto ours = ParseFlatJsonObjects(text);
    const auto reference = ParseWithProtobuf(text);
    REQUIRE(ours);
    REQUIRE(reference);
    CheckSameAsProtobuf(*ours, *reference);
  }
}

TEST_CASE("flat JSON: a corrupted text is refused, or read as protobuf's reader reads it") {
  // One byte deleted, replaced or inserted: whatever this reader still accepts, protobuf's
  // accepts too, with the same values (this reader is the stricter of the two).
  std::mt19937 random(7);
  static const char kBytes[] = "[]{},:\"\\ u0aZe-+.tfn\xC3\xA9\x01";
  int accepted = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    std::string text = TextGenerator(seed).Array();
    const size_t at = std::uniform_int_distribution<size_t>(0, text.size() - 1)(random);
    const char byte = kBytes[std::uniform_int_distribution<size_t>(0, sizeof(kBytes) - 2)(random)];
    switch (seed % 3) {
      case 0:
        text.erase(at, 1);
        break;
      case 1:
        text[at] = byte;
        break;
      default:
        text.insert(at, 1, byte);
        break;
    }
    INFO("seed " << seed << ": " << text);
    const auto ours = ParseFlatJsonObjects(text);
    if (!ours) continue;
    ++accepted;
    const auto reference = ParseWithProtobuf(text);
    REQUIRE(reference);
    CheckSameAsProtobuf(*ours, *reference);
  }
  CHECK(accepted > 0);  // the comparison ran on some corrupted texts
}

}  // namespace
}  // namespace dcl::reservation
