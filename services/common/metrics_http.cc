#include "services/common/metrics_http.h"

#include <arpa/inet.h>
#include <civetweb.h>

#include <cstring>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dcl {
namespace {

// civetweb's own syntax for listening_ports also takes lists, "s" (TLS) and "r" (redirect)
// suffixes and bare ports; dcl takes one plain IPv4 address and port, nothing else.
absl::Status CheckListenAddress(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "' is not IPV4_ADDRESS:PORT"));
  }
  const std::string host = listen.substr(0, colon);
  in_addr address;
  if (inet_pton(AF_INET, host.c_str(), &address) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address '", listen, "': '", host, "' is not an IPv4 address (e.g. 0.0.0.0)"));
  }
  int port = -1;
  const std::string port_text = listen.substr(colon + 1);
  if (port_text.empty() || port_text.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(port_text, &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "': '", port_text, "' is not a port"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, MetricsRegistry& registry) {
  if (absl::Status valid = CheckListenAddress(listen); !valid.ok()) return valid;
  static std::once_flag library_once;
  std::call_once(library_once, [] { mg_init_library(0); });

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(registry));
  // No document_root: civetweb serves no files, only the handler below. Two threads: a scrape
  // every few seconds needs no more, and each idle civetweb thread costs a stack.
  const char* options[] = {"listening_ports", listen.c_str(),
                           "num_threads",     "2",
                           "request_timeout_ms", "10000",
                           "enable_keep_alive", "yes",
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
        absl::StrCat("cannot serve metrics on ", listen, ": ",
                     error_text[0] != '\0' ? error_text : "civetweb did not start"));
  }
  mg_set_request_handler(server->context_, "/metrics$", &MetricsHttpServer::Handle, server.get());
  mg_server_port ports[1];
  std::memset(ports, 0, sizeof(ports));
  if (mg_get_server_ports(server->context_, 1, ports) < 1 || ports[0].port <= 0) {
    return absl::InternalError(absl::StrCat("civetweb reports no port for ", listen));
  }
  server->port_ = ports[0].port;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int MetricsHttpServer::Handle(mg_connection* connection, void* self) {
  const mg_request_info* request = mg_get_request_info(connection);
  const bool head = std::strcmp(request->request_method, "HEAD") == 0;
  if (!head && std::strcmp(request->request_method, "GET") != 0) {
    mg_response_header_start(connection, 405);
    mg_response_header_add(connection, "Allow", "GET, HEAD", -1);
    mg_response_header_add(connection, "Content-Length", "0", -1);
    mg_response_header_send(connection);
    return 405;
  }
  const std::string body = static_cast<MetricsHttpServer*>(self)->registry_.Render();
  mg_send_http_ok(connection, "text/plain; version=0.0.4; charset=utf-8",
                  static_cast<long long>(body.size()));
  if (!head) mg_write(connection, body.data(), body.size());
  return 200;
}

}  // namespace dcl
