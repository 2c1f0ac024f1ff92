#include "services/common/validation.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/common/status.h"

namespace dcl {

namespace {

bool IsValidUtf8WithoutNul(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char lead = static_cast<unsigned char>(s[i]);
    size_t continuation;
    if (lead == 0) return false;
    if (lead < 0x80) {
      continuation = 0;
    } else if ((lead >> 5) == 0x6) {
      continuation = 1;
    } else if ((lead >> 4) == 0xE) {
      continuation = 2;
    } else if ((lead >> 3) == 0x1E) {
      continuation = 3;
    } else {
      return false;
    }
    if (i + continuation >= s.size()) return false;  // truncated sequence
    for (size_t k = 1; k <= continuation; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += continuation + 1;
  }
  return true;
}

}  // namespace

bool IsUuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !absl::ascii_isxdigit(static_cast<unsigned char>(s[i]))) {
      return false;
    }
  }
  return true;
}

absl::Status CheckId(const std::string& field, const std::string& value) {
  if (value.empty()) return InvalidInput(field, "is required");
  if (!IsUuid(value)) return InvalidInput(field, "is not a valid id (expected a UUID)");
  return absl::OkStatus();
}

absl::Status CheckText(const std::string& field, const std::string& value, size_t max_length,
                       bool required) {
  if (required && value.empty()) return InvalidInput(field, "is required");
  if (value.size() > max_length) {
    return InvalidInput(field, absl::StrCat("is longer than ", max_length, " bytes"));
  }
  if (!IsValidUtf8WithoutNul(value)) return InvalidInput(field, "is not valid UTF-8 text");
  return absl::OkStatus();
}

namespace {

size_t LimitFor(const std::string& field_name) {
  if (field_name == "id" || absl::EndsWith(field_name, "_id")) return kMaxIdLength;
  if (absl::EndsWith(field_name, "_key")) return kMaxKeyLength;
  if (field_name == "note" || field_name == "reason" || field_name == "page_token") {
    return kMaxNoteLength;
  }
  return kMaxNameLength;
}

using google::protobuf::FieldDescriptor;

// One integer value of `field` against its declared range.
absl::Status CheckInteger(const google::protobuf::Message& message, const FieldDescriptor* field,
                          const std::string& path, int64_t value) {
  const IntegerRange* range = FindIntegerRange(message.GetDescriptor()->full_name(), field->name());
  if (range == nullptr) return InvalidInput(path, "is not accepted by this server");
  if (value < range->min || value > range->max) {
    return InvalidInput(path, absl::StrCat("must be between ", range->min, " and ", range->max));
  }
  return absl::OkStatus();
}

int64_t IntegerValue(const google::protobuf::Message& message, const FieldDescriptor* field,
                     int index) {
  const google::protobuf::Reflection* r = message.GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field);
    case FieldDescriptor::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field);
    case FieldDescriptor::CPPTYPE_UINT32:
      return repeated ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field);
    case FieldDescriptor::CPPTYPE_UINT64: {
      const uint64_t v =
          repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field);
      // Above INT64_MAX is outside every range; saturate instead of wrapping to a negative.
      return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
    }
    default:
      return 0;
  }
}

bool IsInteger(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

absl::Status CheckEnum(const FieldDescriptor* field, const std::string& path, int value) {
  if (field->enum_type()->FindValueByNumber(value) != nullptr) return absl::OkStatus();
  return InvalidInput(
      path, absl::StrCat(value, " is not a known ", field->enum_type()->name(), " value"));
}

absl::Status CheckMessage(const google::protobuf::Message& message, const std::string& prefix) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path = prefix + field->name();
    if (IsInteger(field)) {
      const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
      for (int i = 0; i < count; ++i) {
        absl::Status status = CheckInteger(message, field, path, IntegerValue(message, field, i));
        if (!status.ok()) return status;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {
      const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
      for (int i = 0; i < count; ++i) {
        const int value = field->is_repeated() ? reflection->GetRepeatedEnumValue(message, field, i)
                                               : reflection->GetEnumValue(message, field);
        absl::Status status = CheckEnum(field, path, value);
        if (!status.ok()) return status;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      const size_t limit = LimitFor(field->name());
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          absl::Status status =
              CheckText(path, reflection->GetRepeatedString(message, field, i), limit, false);
          if (!status.ok()) return status;
        }
      } else {
        absl::Status status = CheckText(path, reflection->GetString(message, field), limit, false);
        if (!status.ok()) return status;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          absl::Status status =
              CheckMessage(reflection->GetRepeatedMessage(message, field, i),
                           absl::StrCat(path, "[", i, "]."));
          if (!status.ok()) return status;
        }
      } else {
        absl::Status status = CheckMessage(reflection->GetMessage(message, field), path + ".");
        if (!status.ok()) return status;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const IntegerRange* FindIntegerRange(const std::string& message, const std::string& field) {
  for (const IntegerRange& range : kIntegerRanges) {
    if (message == range.message && field == range.field) return &range;
  }
  return nullptr;
}

absl::Status CheckRequestLimits(const google::protobuf::Message& request) {
  return CheckMessage(request, "");
}

}  // namespace dcl
