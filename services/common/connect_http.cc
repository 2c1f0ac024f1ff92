#include "services/common/connect_http.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dcl/v1/inventory.pb.h"
#include "dcl/v1/moves.pb.h"
#include "dcl/v1/occupancy.pb.h"
#include "dcl/v1/reservation.pb.h"
#include "services/common/connect_protocol.h"
#include "services/common/grpc_status.h"
#include "services/common/status.h"

namespace dcl {
namespace {

using connect::Codec;
using connect::ContentType;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;

// The descriptors of every dcl service, linked into whichever binary serves HTTP: a process
// routes to services whose code it does not otherwise contain, and an unreferenced generated
// file would be left out by the linker (then FindServiceByName finds nothing).
void LinkServiceDescriptors() {
  (void)v1::ReserveRequest::descriptor();
  (void)v1::PlaceDeviceRequest::descriptor();
  (void)v1::WatchMoveRequest::descriptor();
  (void)v1::CreateSiteRequest::descriptor();
}

// The Content-Security-Policy of every static file: the console's own scripts, styles and
// images only, calls to this origin only, never framed. No inline script or style attribute.
constexpr char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

std::string Header(mg_connection* connection, const char* name) {
  const char* value = mg_get_header(connection, name);
  return value == nullptr ? "" : value;
}

// Headers that go on every answer of the listener.
void AddCommonHeaders(mg_connection* connection) {
  mg_response_header_add(connection, "X-Content-Type-Options", "nosniff", -1);
  mg_response_header_add(connection, "Referrer-Policy", "no-referrer", -1);
}

void SendBody(mg_connection* connection, int http_status, const std::string& content_type,
              const std::vector<std::pair<std::string, std::string>>& headers,
              const std::string& body, bool head = false) {
  mg_response_header_start(connection, http_status);
  mg_response_header_add(connection, "Content-Type", content_type.c_str(), -1);
  mg_response_header_add(connection, "Content-Length", std::to_string(body.size()).c_str(), -1);
  AddCommonHeaders(connection);
  for (const auto& [name, value] : headers) {
    mg_response_header_add(connection, name.c_str(), value.c_str(), -1);
  }
  mg_response_header_send(connection);
  if (!head && !body.empty()) mg_write(connection, body.data(), body.size());
}

// A Connect error answer of a unary call (and of anything refused before a call starts).
// `http_status` 0: Connect's table for the code.
int SendError(mg_connection* connection, const grpc::Status& status,
              std::vector<std::pair<std::string, std::string>> headers = {}, int http_status = 0) {
  headers.emplace_back("Cache-Control", "no-store");
  if (http_status == 0) http_status = connect::HttpStatusOf(status.error_code());
  SendBody(connection, http_status, "application/json", headers, connect::ErrorJson(status));
  return http_status;
}

// The gRPC metadata an answer carries, as HTTP headers: binary values in base64 (Connect's
// rule for "-bin" keys); gRPC's own keys stay behind. `prefix` is "trailer-" for the trailing
// metadata of a unary answer.
void AppendMetadata(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                    const std::string& prefix,
                    std::vector<std::pair<std::string, std::string>>* headers) {
  for (const auto& [key_ref, value_ref] : metadata) {
    const std::string key(key_ref.data(), key_ref.size());
    const std::string value(value_ref.data(), value_ref.size());
    if (absl::StartsWith(key, "grpc-") || absl::StartsWith(key, ":") || key == "content-type") {
      continue;
    }
    headers->emplace_back(prefix + key,
                          absl::EndsWith(key, "-bin") ? absl::Base64Escape(value) : value);
  }
}

std::multimap<std::string, std::string> MetadataMap(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  std::multimap<std::string, std::string> out;
  std::vector<std::pair<std::string, std::string>> headers;
  AppendMetadata(metadata, "", &headers);
  for (auto& [key, value] : headers) out.emplace(std::move(key), std::move(value));
  return out;
}

grpc::ByteBuffer ToByteBuffer(const std::string& bytes) {
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

std::string FromByteBuffer(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

// The request message from a body: JSON by protobuf's JSON mapping (unknown fields refused, as
// the binary decoder of a strict client would not silently drop them), or binary passed on for
// the gRPC server to parse. An empty JSON body is the empty message.
absl::StatusOr<std::string> RequestBytes(const MethodDescriptor& method, Codec codec,
                                         const std::string& body) {
  if (codec == Codec::kProto) return body;
  const Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(method.input_type());
  std::unique_ptr<Message> request(prototype->New());
  if (!absl::StripAsciiWhitespace(body).empty()) {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto parsed = google::protobuf::util::JsonStringToMessage(body, request.get(), options);
    if (!parsed.ok()) {
      return InvalidInput("request", absl::StrCat("is not a ", method.input_type()->full_name(),
                                                  " in protobuf's JSON mapping: ",
                                                  std::string(parsed.message())));
    }
  }
  return request->SerializeAsString();
}

// The answer's bytes in the request's codec; false when they do not parse as the output type
// (a server bug: answered as internal).
bool ResponseBody(const MethodDescriptor& method, Codec codec, const std::string& bytes,
                  std::string* body) {
  if (codec == Codec::kProto) {
    *body = bytes;
    return true;
  }
  const Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(method.output_type());
  std::unique_ptr<Message> response(prototype->New());
  if (!response->ParseFromString(bytes)) return false;
  return google::protobuf::util::MessageToJsonString(*response, body).ok();
}

// Reads the whole body, at most `limit` bytes; false when it is larger or cut short.
bool ReadBody(mg_connection* connection, int limit, std::string* body) {
  const mg_request_info* request = mg_get_request_info(connection);
  if (request->content_length > limit) return false;
  char buffer[16384];
  while (true) {
    const int read = mg_read(connection, buffer, sizeof(buffer));
    if (read < 0) return false;
    if (read == 0) break;
    body->append(buffer, read);
    if (static_cast<int64_t>(body->size()) > limit) return false;
  }
  return request->content_length < 0 ||
         static_cast<long long>(body->size()) == request->content_length;
}

// Waits for one operation of an asynchronous call; the calls here have one in flight at a time.
bool Await(grpc::CompletionQueue& queue, void* tag) {
  void* got = nullptr;
  bool ok = false;
  if (!queue.Next(&got, &ok)) return false;
  return ok && got == tag;
}

// A completion queue must be shut down and emptied before it is destroyed.
void DrainQueue(grpc::CompletionQueue& queue) {
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
}

const char* ContentTypeOfFile(const std::string& path) {
  if (absl::EndsWith(path, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(path, ".js")) return "text/javascript; charset=utf-8";
  if (absl::EndsWith(path, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(path, ".svg")) return "image/svg+xml";
  if (absl::EndsWith(path, ".png")) return "image/png";
  if (absl::EndsWith(path, ".json")) return "application/json";
  if (absl::EndsWith(path, ".ico")) return "image/x-icon";
  if (absl::EndsWith(path, ".woff2")) return "font/woff2";
  return nullptr;  // anything else is not served
}

}  // namespace

absl::Status CheckHttpListenAddress(const std::string& what, const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " address '", listen, "' is not IPV4_ADDRESS:PORT"));
  }
  const std::string host = listen.substr(0, colon);
  in_addr address;
  if (inet_pton(AF_INET, host.c_str(), &address) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " address '", listen, "': '", host,
                                                   "' is not an IPv4 address (e.g. 0.0.0.0)"));
  }
  int port = -1;
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.empty() || port_text.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(port_text, &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " address '", listen, "': '", port_text, "' is not a port"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ConnectHttpServer>> ConnectHttpServer::Start(
    const ConnectHttpConfig& config, ConnectRoutes routes) {
  if (absl::Status valid = CheckHttpListenAddress("HTTP", config.listen); !valid.ok()) {
    return valid;
  }
  LinkServiceDescriptors();
  for (const auto& [service, channel] : routes) {
    if (google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service) ==
        nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("HTTP route to unknown service '", service,
                                                     "' (expected e.g. dcl.v1.MoveService)"));
    }
    if (channel == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("HTTP route to ", service, " has no channel"));
    }
  }
  if (config.threads < 1) return absl::InvalidArgumentError("HTTP threads must be at least 1");
  static std::once_flag library_once;
  std::call_once(library_once, [] { mg_init_library(0); });

  std::unique_ptr<ConnectHttpServer> server(new ConnectHttpServer(config, std::move(routes)));
  const std::string threads = std::to_string(config.threads);
  // No document_root: civetweb serves nothing by itself, every path goes to Handle.
  const char* options[] = {"listening_ports",    config.listen.c_str(),
                           "num_threads",        threads.c_str(),
                           "request_timeout_ms", "30000",
                           "enable_keep_alive",  "yes",
                           nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  mg_init_data init = {&callbacks, nullptr, options};
  unsigned error_code = 0;
  char error_text[256] = {};
  mg_error_data error = {&error_code, error_text, sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", config.listen, ": ",
                     error_text[0] != '\0' ? error_text : "civetweb did not start"));
  }
  mg_set_request_handler(server->context_, "/", &ConnectHttpServer::Handle, server.get());
  mg_server_port ports[1];
  std::memset(ports, 0, sizeof(ports));
  if (mg_get_server_ports(server->context_, 1, ports) < 1 || ports[0].port <= 0) {
    return absl::InternalError(absl::StrCat("civetweb reports no port for ", config.listen));
  }
  server->port_ = ports[0].port;
  return server;
}

ConnectHttpServer::~ConnectHttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

bool ConnectHttpServer::AllowedOrigin(mg_connection* connection, std::string* origin) const {
  *origin = Header(connection, "Origin");
  if (origin->empty()) return false;
  for (const std::string& allowed : config_.cors_origins) {
    if (*origin == allowed) return true;
  }
  return false;
}

int ConnectHttpServer::Handle(mg_connection* connection, void* self_pointer) {
  auto* self = static_cast<ConnectHttpServer*>(self_pointer);
  const mg_request_info* request = mg_get_request_info(connection);
  const std::string path = request->local_uri_raw != nullptr ? request->local_uri_raw : "";
  // "/dcl.v1.OccupancyService/PlaceDevice": a procedure; anything else is a file.
  if (absl::StartsWith(path, "/dcl.")) return self->HandleRpc(connection, path);
  return self->HandleStatic(connection, path);
}

int ConnectHttpServer::HandleStatic(mg_connection* connection, const std::string& path) {
  const mg_request_info* request = mg_get_request_info(connection);
  const bool head = std::strcmp(request->request_method, "HEAD") == 0;
  if (!head && std::strcmp(request->request_method, "GET") != 0) {
    SendBody(connection, 405, "text/plain; charset=utf-8", {{"Allow", "GET, HEAD"}},
             "method not allowed\n");
    return 405;
  }
  // Only plain names below console_dir: no "..", no hidden files, no escapes.
  std::string file = path == "/" ? "/index.html" : path;
  const bool plain =
      !file.empty() && file[0] == '/' && file.find("..") == std::string::npos &&
      file.find("/.") == std::string::npos &&
      file.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") ==
          std::string::npos;
  const char* content_type = ContentTypeOfFile(file);
  absl::StatusOr<std::string> body = absl::NotFoundError("");
  if (!config_.console_dir.empty() && plain && content_type != nullptr) {
    std::ifstream in(config_.console_dir + file, std::ios::binary);
    if (in) {
      std::ostringstream out;
      out << in.rdbuf();
      body = out.str();
    }
  }
  if (!body.ok()) {
    SendBody(connection, 404, "text/plain; charset=utf-8", {}, "not found\n", head);
    return 404;
  }
  SendBody(connection, 200, content_type,
           {{"Content-Security-Policy", kContentSecurityPolicy},
            {"Cache-Control", "no-cache"},
            {"Cross-Origin-Opener-Policy", "same-origin"},
            {"X-Frame-Options", "DENY"}},
           *body, head);
  return 200;
}

int ConnectHttpServer::HandleRpc(mg_connection* connection, const std::string& path) {
  const mg_request_info* request = mg_get_request_info(connection);
  std::vector<std::pair<std::string, std::string>> cors;
  std::string origin;
  if (AllowedOrigin(connection, &origin)) {
    cors = {{"Access-Control-Allow-Origin", origin},
            {"Vary", "Origin"},
            {"Access-Control-Expose-Headers", "dcl-replay, grpc-status, grpc-message"}};
  }
  if (std::strcmp(request->request_method, "OPTIONS") == 0 && !cors.empty()) {
    cors.emplace_back("Access-Control-Allow-Methods", "POST");
    cors.emplace_back("Access-Control-Allow-Headers",
                      "authorization, content-type, connect-protocol-version, "
                      "connect-timeout-ms, connect-accept-encoding, connect-content-encoding");
    cors.emplace_back("Access-Control-Max-Age", "600");
    SendBody(connection, 204, "text/plain", cors, "");
    return 204;
  }
  if (std::strcmp(request->request_method, "POST") != 0) {
    cors.emplace_back("Allow", "POST");
    SendBody(connection, 405, "text/plain; charset=utf-8", cors, "method not allowed\n");
    return 405;
  }

  // "/dcl.v1.MoveService/WatchMove" → service, method.
  const size_t slash = path.find('/', 1);
  const std::string service_name = slash == std::string::npos ? "" : path.substr(1, slash - 1);
  const std::string method_name = slash == std::string::npos ? "" : path.substr(slash + 1);
  const auto route = routes_.find(service_name);
  const google::protobuf::ServiceDescriptor* service =
      route == routes_.end()
          ? nullptr
          : google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service_name);
  const MethodDescriptor* method =
      service == nullptr ? nullptr : service->FindMethodByName(method_name);
  if (method == nullptr || method->client_streaming()) {
    // A path that names no procedure here is not found, as for any HTTP server; the body
    // still says it in Connect's terms.
    return SendError(connection,
                     grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  absl::StrCat("no procedure ", path, " on this endpoint")),
                     cors, 404);
  }

  const std::optional<ContentType> content_type =
      connect::ParseContentType(Header(connection, "Content-Type"));
  if (!content_type.has_value() || content_type->streaming != method->server_streaming()) {
    cors.emplace_back("Accept-Post", method->server_streaming()
                                         ? "application/connect+json, application/connect+proto"
                                         : "application/json, application/proto");
    SendBody(connection, 415, "text/plain; charset=utf-8", cors,
             absl::StrCat(path, " takes ",
                          method->server_streaming() ? "application/connect+json"
                                                     : "application/json",
                          " (or the +proto form)\n"));
    return 415;
  }
  if (!Header(connection, "Connect-Content-Encoding").empty() ||
      !Header(connection, "Content-Encoding").empty()) {
    return SendError(connection,
                     grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  "compressed requests are not supported: send identity"),
                     cors);
  }

  std::string body;
  if (!ReadBody(connection, config_.max_request_bytes, &body)) {
    return SendError(connection,
                     ToGrpcStatus(InvalidInput(
                         "request", absl::StrCat("body is cut short or larger than ",
                                                 config_.max_request_bytes, " bytes"))),
                     cors);
  }
  if (content_type->streaming) {
    std::optional<connect::Enveloped> enveloped = connect::ParseSingleEnvelope(body);
    if (!enveloped.has_value() || enveloped->flags != 0) {
      return SendError(connection,
                       ToGrpcStatus(InvalidInput("request",
                                                 "a server-streaming request is exactly one "
                                                 "uncompressed enveloped message")),
                       cors);
    }
    body = std::move(enveloped->payload);
  }
  absl::StatusOr<std::string> request_bytes = RequestBytes(*method, content_type->codec, body);
  if (!request_bytes.ok()) {
    return SendError(connection, ToGrpcStatus(request_bytes.status()), cors);
  }

  // The caller's credential goes on as gRPC metadata, untouched: the gate judges it.
  grpc::ClientContext context;
  if (const std::string authorization = Header(connection, "Authorization");
      !authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  absl::Duration deadline = method->server_streaming() ? config_.max_stream : config_.max_unary;
  if (std::optional<absl::Duration> timeout =
          connect::ParseTimeout(Header(connection, "Connect-Timeout-Ms"))) {
    deadline = std::min(deadline, *timeout);
  }
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));

  const std::string full_method = absl::StrCat("/", service_name, "/", method_name);
  grpc::GenericStub stub(route->second);
  grpc::CompletionQueue queue;
  grpc::ByteBuffer request_buffer = ToByteBuffer(*request_bytes);

  if (!method->server_streaming()) {
    grpc::ByteBuffer response_buffer;
    grpc::Status status;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
        stub.PrepareUnaryCall(&context, full_method, request_buffer, &queue);
    call->StartCall();
    int finish_tag = 0;
    call->Finish(&response_buffer, &status, &finish_tag);
    if (!Await(queue, &finish_tag)) {
      status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the call did not complete");
    }
    DrainQueue(queue);
    std::vector<std::pair<std::string, std::string>> headers = cors;
    AppendMetadata(context.GetServerInitialMetadata(), "", &headers);
    AppendMetadata(context.GetServerTrailingMetadata(), "trailer-", &headers);
    if (!status.ok()) return SendError(connection, status, headers);
    std::string response_body;
    if (!ResponseBody(*method, content_type->codec, FromByteBuffer(response_buffer),
                      &response_body)) {
      return SendError(connection, ToGrpcStatus(Internal("the answer could not be encoded")),
                       headers);
    }
    headers.emplace_back("Cache-Control", "no-store");
    SendBody(connection, 200, connect::ContentTypeHeader(*content_type), headers, response_body);
    return 200;
  }

  // Server streaming: every message of the gRPC stream becomes one envelope in a chunk; the
  // status and trailers end the body as the end-of-stream envelope. The HTTP status is 200 once
  // the call started, whatever its end (the protocol's rule for streams).
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, full_method, &queue);
  int tag = 0;
  call->StartCall(&tag);
  bool alive = Await(queue, &tag);
  if (alive) {
    call->Write(request_buffer, &tag);
    alive = Await(queue, &tag);
  }
  if (alive) {
    call->WritesDone(&tag);
    alive = Await(queue, &tag);
  }
  if (alive) {
    call->ReadInitialMetadata(&tag);
    alive = Await(queue, &tag);
  }
  std::vector<std::pair<std::string, std::string>> headers = cors;
  if (alive) AppendMetadata(context.GetServerInitialMetadata(), "", &headers);
  mg_response_header_start(connection, 200);
  mg_response_header_add(connection, "Content-Type",
                         connect::ContentTypeHeader(*content_type).c_str(), -1);
  mg_response_header_add(connection, "Transfer-Encoding", "chunked", -1);
  mg_response_header_add(connection, "Cache-Control", "no-store", -1);
  AddCommonHeaders(connection);
  for (const auto& [name, value] : headers) {
    mg_response_header_add(connection, name.c_str(), value.c_str(), -1);
  }
  mg_response_header_send(connection);
  bool client_gone = false;
  while (alive) {
    grpc::ByteBuffer message;
    call->Read(&message, &tag);
    if (!Await(queue, &tag)) break;  // the stream ended: its status follows
    std::string encoded;
    if (!ResponseBody(*method, content_type->codec, FromByteBuffer(message), &encoded)) {
      context.TryCancel();
      break;
    }
    const std::string chunk = connect::Envelope(0, encoded);
    if (!client_gone && mg_send_chunk(connection, chunk.data(), chunk.size()) <= 0) {
      // The HTTP client went away: the watch ends on the server too.
      client_gone = true;
      context.TryCancel();
    }
  }
  grpc::Status status;
  call->Finish(&status, &tag);
  if (!Await(queue, &tag) && status.ok()) {
    status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the stream did not complete");
  }
  DrainQueue(queue);
  if (!client_gone) {
    const std::string end = connect::Envelope(
        connect::kFlagEndStream,
        connect::EndStreamJson(status, MetadataMap(context.GetServerTrailingMetadata())));
    mg_send_chunk(connection, end.data(), end.size());
    mg_send_chunk(connection, "", 0);
  }
  return 200;
}

}  // namespace dcl
