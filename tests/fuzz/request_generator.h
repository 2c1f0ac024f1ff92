// Requests for every RPC of the given services, built with protobuf reflection over the service
// descriptors: an RPC added to a .proto is fuzzed without touching this code. Three kinds:
//   * template: a request that would succeed for organization A (text-format templates per RPC,
//     filled with A's seeded objects); an RPC without a template starts from an empty request;
//   * mutated: a template with one or two fields (anywhere in the message tree) replaced by a
//     hostile value or cleared;
//   * random: every field set or not at random, oneofs on a random case.
// The mix is 10 % templates, 75 % mutated, 15 % random. Besides replacing a field by a pool
// value (or clearing it), a mutation may push an integer field to an extreme of its type.
// Values come from pools chosen by the field's type, refined by its name the way the services'
// own validation reads names: fields named id / *_id get ids (A's, V's, W's, unknown UUIDs,
// malformed ones), fields whose name contains "unit" get rack-edge and overflow-prone integers,
// other integers get boundary values, enums get valid, zero and unknown (open enum) values,
// strings get empty / 10 KB / NUL / non-UTF-8 text. Deterministic for a given RNG.
#ifndef DCL_TESTS_FUZZ_REQUEST_GENERATOR_H_
#define DCL_TESTS_FUZZ_REQUEST_GENERATOR_H_

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_world.h"

namespace dcl::fuzz {

using Rng = std::mt19937_64;

// What goes into the authorization metadata, and a label for the report.
struct Caller {
  bool send_authorization = true;
  std::string authorization;  // the whole header value, e.g. "Bearer dcl_..."
  std::string label;          // "A/dc-operator", "V/commerce", "bogus/empty", ...
};

struct GeneratedCall {
  const google::protobuf::MethodDescriptor* method = nullptr;
  std::unique_ptr<google::protobuf::Message> request;
  Caller caller;
  std::string origin;  // "template", "random", "mutated(unit)", ...
};

class RequestGenerator {
 public:
  RequestGenerator(const World& world,
                   const std::vector<const google::protobuf::ServiceDescriptor*>& services);

  const std::vector<const google::protobuf::MethodDescriptor*>& methods() const { return methods_; }
  GeneratedCall Next(Rng& rng) const;

  // V's ids found in id fields (id, *_id) of the request, lower case.
  std::set<std::string> VictimIdsIn(const google::protobuf::Message& request) const;
  // Replaces, in every id field, each id of `replacements` (keys lower case) by its value.
  static void ReplaceIds(google::protobuf::Message* request,
                         const std::map<std::string, std::string>& replacements);
  // A random version-4 UUID drawn from `rng`.
  static std::string RandomUuid(Rng& rng);
  // The RPCs without a template (fuzzed with random and mutated empty requests only).
  std::vector<std::string> MethodsWithoutTemplates() const;

 private:
  Caller PickCaller(const google::protobuf::MethodDescriptor& method, Rng& rng) const;
  std::unique_ptr<google::protobuf::Message> FromTemplate(
      const google::protobuf::MethodDescriptor& method, Rng& rng) const;
  std::string Expand(const std::string& text, Rng& rng) const;
  void Randomize(google::protobuf::Message* message, Rng& rng, int depth) const;
  std::string Mutate(google::protobuf::Message* message, Rng& rng) const;
  void SetRandomValue(google::protobuf::Message* message,
                      const google::protobuf::FieldDescriptor* field, Rng& rng, int depth) const;

  std::string IdValue(const std::string& field_name, Rng& rng) const;
  std::string StringValue(const google::protobuf::FieldDescriptor* field, Rng& rng) const;
  int64_t IntValue(const google::protobuf::FieldDescriptor* field, Rng& rng) const;
  int EnumValue(const google::protobuf::EnumDescriptor* type, Rng& rng) const;

  const World& world_;
  std::vector<const google::protobuf::MethodDescriptor*> methods_;
  std::map<std::string, std::vector<std::string>> templates_;  // method full name → templates
  std::set<std::string> victim_ids_;
  std::vector<std::string> text_pool_;  // valid UTF-8 (with NUL, 10 KB, ...)
  std::vector<std::string> invalid_utf8_;
  std::vector<std::string> malformed_ids_;
  std::vector<int64_t> rack_edges_;
  std::vector<int64_t> overflow_units_;
  std::vector<int64_t> int_pool_;
};

}  // namespace dcl::fuzz

#endif  // DCL_TESTS_FUZZ_REQUEST_GENERATOR_H_
