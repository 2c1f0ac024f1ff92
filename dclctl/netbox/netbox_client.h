// `dclctl import netbox --url`, the client: reads NetBox's lists over its REST API with
// libcurl. Every list is read page by page (`?limit=1000`, NetBox's MAX_PAGE_SIZE by default,
// which caps `limit=0` too), following `next` until it is null; the pages go to
// netbox_mapping.h's ParseExport unchanged, which checks that each list is complete.
//
// Transport rules: HTTPS is verified against the system's CA store, or `ca_file` for a private
// CA; plain http is accepted for a loopback host only (the token would travel in clear text),
// judged by address: an IP literal of the loopback range, or "localhost", which curl resolves to
// loopback itself; no other name.
// Each request has a timeout; 429 and 5xx answers and transport failures (refused connection,
// timeout, reset) are retried with exponential backoff, honouring Retry-After; 401, 403 and
// 404 end the read at once with an error naming the URL. Redirects are not followed, and a
// `next` URL is requested at the configured origin (its path and query only), so the token is
// never sent to a host the operator did not name.
#ifndef DCL_DCLCTL_NETBOX_NETBOX_CLIENT_H_
#define DCL_DCLCTL_NETBOX_NETBOX_CLIENT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dclctl/netbox/netbox_mapping.h"

namespace dcl::admin::netbox {

struct FetchOptions {
  std::string base_url;                // https://netbox.example.net (a path prefix is kept)
  std::string token;                   // the API token's text, v1 or v2 (nbt_…)
  std::string ca_file;                 // PEM bundle of a private CA; "" = the system's store
  std::vector<std::string> site_slugs;  // only these sites (NetBox's `site`/`slug` filters)
  int page_size = 1000;
  int timeout_seconds = 30;   // per request
  int max_attempts = 5;       // per request, counting the first
  int first_backoff_ms = 500;  // doubled after each failed attempt, at most 30 s
  // Every page of every list is kept until all are parsed: the sum of their sizes is capped
  // (1 GiB by default, --netbox_max_bytes), and each page at 256 MiB.
  size_t max_total_bytes = size_t{1} << 30;
  // Called after each page: list name, pages read, objects read, the list's count.
  std::function<void(const std::string&, int, size_t, size_t)> on_page;
};

// The Authorization header's value for `token`: "Bearer nbt_…" for a v2 token (its `nbt_`
// prefix), "Token …" for a v1 token (NetBox's documented forms).
std::string AuthorizationHeader(const std::string& token);

// The first page's URL of `list` (kLists): the base URL, /api/dcim/<list>/, the page size and
// the site filters. INVALID_ARGUMENT when the base URL is not http(s)://host[:port][/path], or
// is plain http to a host that is not loopback.
absl::StatusOr<std::string> FirstPageUrl(const FetchOptions& options, const std::string& list);

// `next` as requested: its path and query at the base URL's origin.
absl::StatusOr<std::string> SameOriginUrl(const std::string& base_url, const std::string& next);

// Every page of every list. Errors name the URL: UNAUTHENTICATED (401), PERMISSION_DENIED
// (403), NOT_FOUND (404), UNAVAILABLE (retries exhausted, TLS or transport failures),
// INVALID_ARGUMENT (an answer that is not a NetBox list page, a redirect, a loop of `next`),
// RESOURCE_EXHAUSTED (the pages exceed max_total_bytes in all, or one exceeds 256 MiB; the
// message names the cap).
absl::StatusOr<Pages> FetchAll(const FetchOptions& options);

}  // namespace dcl::admin::netbox

#endif  // DCL_DCLCTL_NETBOX_NETBOX_CLIENT_H_
