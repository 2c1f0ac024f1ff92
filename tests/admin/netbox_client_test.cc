// The NetBox client's pure parts: the token header NetBox documents for v1 and v2 tokens, the
// first page's URL (page size, site filters, a path prefix, plain http refused off loopback),
// and `next` requested at the configured origin only.
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "dclctl/netbox/netbox_client.h"

namespace dcl::admin::netbox {
namespace {

TEST_CASE("token header: Bearer for a v2 token (nbt_), Token for a v1 token") {
  CHECK(AuthorizationHeader("nbt_4F9DAouzURLb.zjebxBPz") == "Bearer nbt_4F9DAouzURLb.zjebxBPz");
  CHECK(AuthorizationHeader("0123456789abcdef0123456789abcdef01234567") ==
        "Token 0123456789abcdef0123456789abcdef01234567");
}

TEST_CASE("first page URL: page size, site filters, a path prefix") {
  FetchOptions o;
  o.base_url = "https://netbox.example.net/";
  o.site_slugs = {"fra1", "ams 2"};
  CHECK(*FirstPageUrl(o, "devices") ==
        "https://netbox.example.net/api/dcim/devices/?limit=1000&site=fra1&site=ams%202");
  CHECK(*FirstPageUrl(o, "sites") ==
        "https://netbox.example.net/api/dcim/sites/?limit=1000&slug=fra1&slug=ams%202");
  CHECK(*FirstPageUrl(o, "device-types") ==
        "https://netbox.example.net/api/dcim/device-types/?limit=1000");
  // The power lists are narrowed by NetBox's `site` filter too (a feed by its panel's site, a
  // power port by its device's).
  for (const char* list : {"power-panels", "power-feeds", "power-ports"}) {
    CHECK(*FirstPageUrl(o, list) == absl::StrCat("https://netbox.example.net/api/dcim/", list,
                                                  "/?limit=1000&site=fra1&site=ams%202"));
  }
  o.base_url = "https://example.net/netbox";
  o.site_slugs.clear();
  CHECK(*FirstPageUrl(o, "racks") == "https://example.net/netbox/api/dcim/racks/?limit=1000");
}

TEST_CASE("first page URL: plain http only to loopback; no credentials, no query, no ftp") {
  FetchOptions o;
  o.base_url = "http://netbox.example.net";
  absl::StatusOr<std::string> clear = FirstPageUrl(o, "sites");
  REQUIRE_FALSE(clear.ok());
  CHECK(absl::StrContains(clear.status().message(), "clear text"));
  o.base_url = "http://127.0.0.1:8080";
  CHECK(FirstPageUrl(o, "sites").ok());
  o.base_url = "http://[::1]:8080";
  CHECK(FirstPageUrl(o, "sites").ok());
  o.base_url = "http://localhost.evil.net";
  CHECK_FALSE(FirstPageUrl(o, "sites").ok());
  o.base_url = "https://user:pw@netbox.example.net";
  CHECK_FALSE(FirstPageUrl(o, "sites").ok());
  o.base_url = "https://netbox.example.net/?x=1";
  CHECK_FALSE(FirstPageUrl(o, "sites").ok());
  o.base_url = "ftp://netbox.example.net";
  CHECK_FALSE(FirstPageUrl(o, "sites").ok());
}

TEST_CASE("loopback is judged by address: names that merely start like one are not") {
  FetchOptions o;
  for (const char* loopback :
       {"http://127.0.0.1", "http://127.1.2.3:8000/netbox", "http://[::1]", "http://localhost:8000",
        "http://LOCALHOST", "http://[::ffff:127.0.0.1]:8080"}) {
    INFO(loopback);
    o.base_url = loopback;
    CHECK(FirstPageUrl(o, "sites").ok());
  }
  for (const char* name :
       {"http://127.evil.example", "http://127.0.0.1.nip.io", "http://127.0.0.1.evil.example:80",
        "http://localhost.evil.net", "http://[::2]", "http://[::ffff:10.0.0.1]", "http://128.0.0.1",
        "http://[::1", "http://0x7f000001"}) {
    INFO(name);
    o.base_url = name;
    absl::StatusOr<std::string> refused = FirstPageUrl(o, "sites");
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::StrContains(refused.status().message(), "clear text"));
  }
}

TEST_CASE("next: requested at the configured origin, whatever host NetBox names") {
  CHECK(*SameOriginUrl("https://netbox.example.net",
                       "http://internal:8000/api/dcim/devices/?limit=1000&offset=1000") ==
        "https://netbox.example.net/api/dcim/devices/?limit=1000&offset=1000");
  CHECK(*SameOriginUrl("https://evil.example.net",
                       "https://netbox.example.net/api/dcim/devices/?offset=5") ==
        "https://evil.example.net/api/dcim/devices/?offset=5");
  // A path prefix of the base URL is kept, once.
  CHECK(*SameOriginUrl("https://example.net/netbox",
                       "https://example.net/netbox/api/dcim/racks/?offset=5") ==
        "https://example.net/netbox/api/dcim/racks/?offset=5");
  CHECK(*SameOriginUrl("https://example.net/netbox", "http://app:8000/api/dcim/racks/?offset=5") ==
        "https://example.net/netbox/api/dcim/racks/?offset=5");
  CHECK_FALSE(SameOriginUrl("https://netbox.example.net", "javascript:alert(1)").ok());
}

}  // namespace
}  // namespace dcl::admin::netbox
