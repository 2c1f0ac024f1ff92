#include "tests/support/metrics_scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cmath>
#include <regex>
#include <sstream>

namespace dcl::testing {

HttpResponse HttpRequest(int port, const std::string& path, const std::string& method) {
  HttpResponse response;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return response;
  }
  const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[8192];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
  }
  close(fd);

  const size_t header_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || header_end == std::string::npos) return response;
  response.status = std::stoi(raw.substr(raw.find(' ') + 1, 3));
  response.body = raw.substr(header_end + 4);
  std::istringstream headers(raw.substr(0, header_end));
  std::string line;
  while (std::getline(headers, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "content-type") {
      response.content_type = line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return response;
}

Samples ParseSamples(const std::string& exposition) {
  Samples samples;
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    // The value follows the last space; label values may hold spaces, never after the '}'.
    const size_t space = line.rfind(' ');
    INFO("exposition line: " << line);
    REQUIRE(space != std::string::npos);
    REQUIRE(space > 0);
    const std::string value = line.substr(space + 1);
    double number = 0;
    if (value == "+Inf") {
      number = HUGE_VAL;
    } else if (value == "-Inf") {
      number = -HUGE_VAL;
    } else {
      size_t used = 0;
      number = std::stod(value, &used);
      REQUIRE(used == value.size());
    }
    REQUIRE(samples.emplace(line.substr(0, space), number).second);  // each series once
  }
  return samples;
}

Samples Scrape(int port) {
  const HttpResponse response = HttpRequest(port, "/metrics");
  REQUIRE(response.status == 200);
  CHECK(response.content_type == "text/plain; version=0.0.4; charset=utf-8");
  return ParseSamples(response.body);
}

double ValueOr0(const Samples& samples, const std::string& series) {
  auto it = samples.find(series);
  return it == samples.end() ? 0 : it->second;
}

std::optional<int> LoggedMetricsPort(const std::string& log) {
  std::smatch match;
  if (!std::regex_search(log, match, std::regex("metrics on port ([0-9]+)"))) return std::nullopt;
  return std::stoi(match[1]);
}

}  // namespace dcl::testing
