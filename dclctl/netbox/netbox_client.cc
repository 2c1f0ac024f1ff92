#include "dclctl/netbox/netbox_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace dcl::admin::netbox {
namespace {

// A page of NetBox is a few hundred kB; anything far above is not one.
constexpr size_t kMaxPageBytes = 256u << 20;
// A list of 100 million objects at 1000 a page; a `next` chain longer than that loops.
constexpr int kMaxPages = 100000;

struct Origin {
  std::string scheme, host_port, path;  // path: "" or "/prefix" without a trailing slash
};

absl::StatusOr<Origin> SplitUrl(const std::string& url, bool base = true) {
  Origin o;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "https://")) {
    o.scheme = "https";
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    o.scheme = "http";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", url, "\" is not an http(s):// URL"));
  }
  const size_t slash = rest.find('/');
  o.host_port = std::string(rest.substr(0, slash));
  if (o.host_port.empty() || absl::StrContains(o.host_port, "@")) {
    return absl::InvalidArgumentError(absl::StrCat("\"", url, "\": no host (or credentials in "
                                                   "the URL: use --token-file)"));
  }
  if (slash != absl::string_view::npos) o.path = std::string(rest.substr(slash));
  // Query and fragment do not belong to a base URL.
  if (o.path.find_first_of("?#") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("\"", url, "\": a base URL has no query"));
  }
  while (base && !o.path.empty() && o.path.back() == '/') o.path.pop_back();
  return o;
}

// Loopback by address: an IPv4 literal in 127.0.0.0/8, the IPv6 literal ::1 or an IPv4-mapped
// ::ffff:127.x.y.z, or the name "localhost", which curl (7.78 on; Debian 12 has 7.88) answers
// with the loopback addresses itself, never through a resolver. Any other name is not loopback,
// whatever it starts with: "127.evil.example" and "localhost.evil.net" are names in DNS.
bool Loopback(const std::string& host_port) {
  std::string host;
  if (absl::StartsWith(host_port, "[")) {
    const size_t close = host_port.find(']');
    if (close == std::string::npos) return false;
    host = host_port.substr(1, close - 1);
  } else {
    host = host_port.substr(0, host_port.find(':'));
  }
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  in_addr v4;
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return false;
}

std::string Escape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

// One answer's body, read up to `limit` bytes.
struct Body {
  std::string text;
  size_t limit = 0;
  bool over_limit = false;
};

size_t Collect(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  if (body->text.size() + size * count > body->limit) {
    body->over_limit = true;
    return 0;  // aborts the transfer
  }
  body->text.append(data, size * count);
  return size * count;
}

size_t CollectHeader(char* data, size_t size, size_t count, void* user) {
  auto* retry_after = static_cast<int*>(user);
  absl::string_view line(data, size * count);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    int seconds = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(12)), &seconds)) {
      *retry_after = seconds;
    }
  }
  return size * count;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// One connection to NetBox, reused from page to page.
class Session {
 public:
  explicit Session(const FetchOptions& options) : options_(options) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_.reset(curl_easy_init());
    headers_.reset(curl_slist_append(
        nullptr, ("Authorization: " + AuthorizationHeader(options.token)).c_str()));
    curl_slist_append(headers_.get(), "Accept: application/json");
  }

  // GET `url` with retries. The body of a 200 answer, of at most `limit` bytes: a larger one
  // ends the transfer with `too_large` as the error (RESOURCE_EXHAUSTED, not retried).
  absl::StatusOr<std::string> Get(const std::string& url, size_t limit,
                                  const std::string& too_large) {
    int backoff_ms = std::max(1, options_.first_backoff_ms);
    std::string last_error;
    for (int attempt = 1; attempt <= std::max(1, options_.max_attempts); ++attempt) {
      if (attempt > 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        backoff_ms = std::min(backoff_ms * 2, 30000);
      }
      Body body;
      body.limit = limit;
      int retry_after = -1;
      CURL* c = curl_.get();
      curl_easy_reset(c);
      curl_easy_setopt(c, CURLOPT_URL, url.c_str());
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers_.get());
      curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
      if (!options_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
      curl_easy_setopt(c, CURLOPT_TIMEOUT, static_cast<long>(options_.timeout_seconds));
      curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                       static_cast<long>(std::min(options_.timeout_seconds, 10)));
      curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // gzip if NetBox's proxy offers it
      curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Collect);
      curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
      curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, CollectHeader);
      curl_easy_setopt(c, CURLOPT_HEADERDATA, &retry_after);
      const CURLcode code = curl_easy_perform(c);
      if (body.over_limit) {
        return absl::ResourceExhaustedError(absl::StrCat("GET ", url, ": ", too_large));
      }
      if (code != CURLE_OK) {
        last_error = curl_easy_strerror(code);
        // A certificate that does not verify, or a page too large, will not change on retry.
        if (code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE ||
            code == CURLE_SSL_CONNECT_ERROR || code == CURLE_WRITE_ERROR ||
            code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT) {
          return absl::UnavailableError(absl::StrCat("GET ", url, ": ", last_error));
        }
        continue;
      }
      long status = 0;
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
      if (status == 200) return std::move(body.text);
      const std::string what = absl::StrCat("GET ", url, ": HTTP ", status);
      if (status == 401) {
        return absl::UnauthenticatedError(what + ": the token was not accepted");
      }
      if (status == 403) {
        return absl::PermissionDeniedError(
            what + ": the token is invalid, expired, or may not read this list");
      }
      if (status == 404) {
        return absl::NotFoundError(what + ": no such list (is the URL NetBox's base URL?)");
      }
      if (status == 429 || status >= 500) {
        last_error = absl::StrCat("HTTP ", status);
        if (retry_after >= 0) backoff_ms = std::min(std::max(retry_after * 1000, 1), 30000);
        continue;
      }
      if (status >= 300 && status < 400) {
        return absl::InvalidArgumentError(
            what + ": a redirect (not followed: give NetBox's own base URL)");
      }
      return absl::InvalidArgumentError(what);
    }
    return absl::UnavailableError(absl::StrCat("GET ", url, ": ", last_error, " after ",
                                               options_.max_attempts, " attempts"));
  }

 private:
  const FetchOptions& options_;
  std::unique_ptr<CURL, CurlDeleter> curl_;
  std::unique_ptr<curl_slist, SlistDeleter> headers_;
};

}  // namespace

std::string AuthorizationHeader(const std::string& token) {
  return (absl::StartsWith(token, "nbt_") ? "Bearer " : "Token ") + token;
}

absl::StatusOr<std::string> FirstPageUrl(const FetchOptions& options, const std::string& list) {
  absl::StatusOr<Origin> o = SplitUrl(options.base_url);
  if (!o.ok()) return o.status();
  if (o->scheme == "http" && !Loopback(o->host_port)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", options.base_url, "\": plain http would send the token in clear text; use https "
        "(http is accepted for a loopback host only)"));
  }
  std::string url = absl::StrCat(o->scheme, "://", o->host_port, o->path, "/api/dcim/", list,
                                 "/?limit=", options.page_size);
  if (list != "device-types") {
    const char* filter = list == "sites" ? "slug" : "site";
    for (const std::string& slug : options.site_slugs) {
      absl::StrAppend(&url, "&", filter, "=", Escape(slug));
    }
  }
  return url;
}

absl::StatusOr<std::string> SameOriginUrl(const std::string& base_url, const std::string& next) {
  absl::StatusOr<Origin> base = SplitUrl(base_url);
  if (!base.ok()) return base.status();
  absl::StatusOr<Origin> n = SplitUrl(next.substr(0, next.find_first_of("?#")), false);
  if (!n.ok()) return absl::InvalidArgumentError(absl::StrCat("\"next\" ", n.status().message()));
  const size_t query = next.find('?');
  std::string path = n->path;
  // The path the operator named is kept when NetBox (behind a proxy) does not know it.
  if (!base->path.empty() && !absl::StartsWith(path, base->path + "/")) path = base->path + path;
  return absl::StrCat(base->scheme, "://", base->host_port, path,
                      query == std::string::npos ? "" : next.substr(query));
}

absl::StatusOr<Pages> FetchAll(const FetchOptions& options) {
  Session session(options);
  Pages out;
  size_t total_bytes = 0;  // of every page read so far, all lists
  for (const char* list : kLists) {
    absl::StatusOr<std::string> url = FirstPageUrl(options, list);
    if (!url.ok()) return url.status();
    std::vector<std::string>& pages = out[list];
    std::set<std::string> seen;
    size_t objects = 0;
    while (true) {
      if (!seen.insert(*url).second || pages.size() >= static_cast<size_t>(kMaxPages)) {
        return absl::InvalidArgumentError(
            absl::StrCat("GET ", *url, ": \"next\" leads back to a page already read"));
      }
      // Every page stays in memory until the lists are parsed: the whole import is capped, and
      // so is each page (a page far above a few MB is not NetBox's).
      const size_t remaining =
          options.max_total_bytes > total_bytes ? options.max_total_bytes - total_bytes : 0;
      const bool total_binds = remaining < kMaxPageBytes;
      absl::StatusOr<std::string> body = session.Get(
          *url, total_binds ? remaining : kMaxPageBytes,
          total_binds ? absl::StrCat("the import's pages exceed the cap of ",
                                     options.max_total_bytes,
                                     " bytes in all (--netbox_max_bytes); nothing was written")
                      : absl::StrCat("one page exceeds ", kMaxPageBytes,
                                     " bytes (not a NetBox list page)"));
      if (!body.ok()) return body.status();
      total_bytes += body->size();
      google::protobuf::Struct page;
      if (!google::protobuf::util::JsonStringToMessage(*body, &page).ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("GET ", *url, ": the answer is not JSON (not NetBox's API?)"));
      }
      const auto& fields = page.fields();
      auto results = fields.find("results");
      if (results == fields.end() || !results->second.has_list_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("GET ", *url, ": not a NetBox list page (no \"results\")"));
      }
      objects += static_cast<size_t>(results->second.list_value().values_size());
      auto count = fields.find("count");
      const size_t total = count != fields.end() && count->second.has_number_value()
                               ? static_cast<size_t>(count->second.number_value())
                               : objects;
      pages.push_back(*std::move(body));
      if (options.on_page) options.on_page(list, static_cast<int>(pages.size()), objects, total);
      auto next = fields.find("next");
      if (next == fields.end() || !next->second.has_string_value() ||
          next->second.string_value().empty()) {
        break;
      }
      url = SameOriginUrl(options.base_url, next->second.string_value());
      if (!url.ok()) return url.status();
    }
  }
  return out;
}

}  // namespace dcl::admin::netbox
