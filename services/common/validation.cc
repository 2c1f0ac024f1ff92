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

absl::Status CheckMessage(const google::protobuf::Message& message, const std::string& prefix) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    const std::string path = prefix + field->name();
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_STRING) {
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
    } else if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          absl::Status status =
              CheckMessage(reflection->GetRepeatedMessage(message, field, i), path + ".");
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

absl::Status CheckRequestLimits(const google::protobuf::Message& request) {
  return CheckMessage(request, "");
}

}  // namespace dcl
