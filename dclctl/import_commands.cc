// dclctl's import commands: NetBox (netbox_client.h reads, netbox_mapping.h maps,
// netbox_applier.h writes).
#include "dclctl/command_groups.h"
#include "dclctl/command_support.h"
#include "dclctl/netbox/netbox_applier.h"
#include "dclctl/netbox/netbox_client.h"
#include "dclctl/netbox/netbox_mapping.h"

namespace dcl::admin {
namespace {

std::string ReadFileText(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  *ok = static_cast<bool>(in) || in.eof();
  return text.str();
}

void PrintImportReport(const Invocation& inv, const std::string& source, const std::string& run,
                       bool dry_run, netbox::Report& report) {
  const std::pair<const char*, const std::vector<netbox::Skipped>*> lists[] = {
      {"skipped", &report.skipped}, {"refused", &report.refused}, {"held", &report.held},
      {"drift", &report.drift}, {"unknown figures", &report.unknown}};
  if (inv.json) {
    google::protobuf::Struct out;
    auto& fields = *out.mutable_fields();
    fields["dry_run"].set_bool_value(dry_run);
    fields["run"].set_string_value(run);
    for (const auto& [kind, counts] : report.counts) {
      auto& c = *fields[kind].mutable_struct_value()->mutable_fields();
      c["created"].set_number_value(counts.created);
      c["unchanged"].set_number_value(counts.unchanged);
    }
    for (const auto& [name, list] : lists) {
      auto& values = *fields[name].mutable_list_value();
      for (const netbox::Skipped& s : *list) {
        auto& item = *values.add_values()->mutable_struct_value()->mutable_fields();
        item["what"].set_string_value(s.what);
        item["reason"].set_string_value(s.reason);
      }
    }
    std::printf("%s\n", ToJson(out).c_str());
    return;
  }
  std::printf("NetBox import from %s, %s%s\n", source.c_str(), run.c_str(),
              dry_run ? " (dry run: nothing written)" : "");
  std::vector<std::vector<std::string>> rows;
  for (const char* kind :
       {"sites", "racks", "rack capacity", "devices", "placements", "blockings",
        "drift blockings"}) {
    rows.push_back({kind, absl::StrCat(report.counts[kind].created),
                    absl::StrCat(report.counts[kind].unchanged)});
  }
  PrintLines(FormatTable({"", dry_run ? "WOULD CREATE" : "CREATED", "UNCHANGED"}, rows, {1, 2}));
  for (const auto& [name, list] : lists) {
    std::printf("%s: %zu\n", name, list->size());
    for (const netbox::Skipped& s : *list) {
      std::printf("  %s: %s\n", s.what.c_str(), s.reason.c_str());
    }
  }
}

// The NetBox lists, from saved files (--dir) or NetBox's API (--url): parsed completely before
// anything is written.
absl::StatusOr<netbox::Export> ReadNetbox(const Invocation& inv, std::string* source) {
  const std::string dir = absl::GetFlag(FLAGS_dir), url = absl::GetFlag(FLAGS_url);
  if (dir.empty() == url.empty()) throw UsageError("one of --dir and --url is required");
  if (!dir.empty()) {
    *source = dir;
    std::map<std::string, std::string> files;
    for (const char* name : netbox::kFiles) {
      bool ok = false;
      std::string text = ReadFileText(dir + "/" + name, &ok);
      const bool optional = std::find_if(std::begin(netbox::kOptionalFiles),
                                         std::end(netbox::kOptionalFiles), [&](const char* o) {
                                           return std::string(o) == name;
                                         }) != std::end(netbox::kOptionalFiles);
      // A power list absent from a directory saved before it was read: read as empty.
      if (!ok && optional && access((dir + "/" + name).c_str(), F_OK) != 0) continue;
      if (!ok) throw UsageError(absl::StrCat("cannot read ", dir, "/", name));
      files[name] = std::move(text);
    }
    absl::StatusOr<netbox::Export> in = netbox::ParseExport(files);
    if (!in.ok()) throw UsageError(std::string(in.status().message()));
    return in;
  }
  *source = url;
  netbox::FetchOptions options;
  options.base_url = url;
  const std::string token_file = Required(FLAGS_token_file, "token_file");
  bool ok = false;
  options.token = std::string(absl::StripAsciiWhitespace(ReadFileText(token_file, &ok)));
  if (!ok) throw UsageError("cannot read --token-file " + token_file);
  if (options.token.empty() || absl::StrContains(options.token, " ") ||
      absl::StrContains(options.token, "\n")) {
    throw UsageError("--token-file " + token_file + " must hold one token, nothing else");
  }
  options.ca_file = absl::GetFlag(FLAGS_ca);
  for (absl::string_view slug : absl::StrSplit(absl::GetFlag(FLAGS_site), ',', absl::SkipEmpty())) {
    options.site_slugs.emplace_back(absl::StripAsciiWhitespace(slug));
  }
  options.timeout_seconds = std::max(1, absl::GetFlag(FLAGS_netbox_timeout_seconds));
  options.max_attempts = std::max(1, absl::GetFlag(FLAGS_netbox_attempts));
  options.first_backoff_ms = std::max(1, absl::GetFlag(FLAGS_netbox_backoff_ms));
  options.max_total_bytes =
      static_cast<size_t>(std::max<int64_t>(1, absl::GetFlag(FLAGS_netbox_max_bytes)));
  const bool terminal = !inv.json && isatty(1) == 1;
  if (terminal) {
    options.on_page = [](const std::string& list, int pages, size_t objects, size_t total) {
      std::printf("\rreading %-18s page %d, %zu/%zu%20s", list.c_str(), pages, objects, total, "");
      std::fflush(stdout);
    };
  }
  absl::StatusOr<netbox::Pages> pages = netbox::FetchAll(options);
  if (terminal) std::printf("\r%90s\r", "");
  if (!pages.ok()) return pages.status();
  absl::StatusOr<netbox::Export> in = netbox::ParseExport(*pages);
  if (!in.ok()) return absl::InvalidArgumentError(absl::StrCat(url, ": ", in.status().message()));
  return in;
}

int ImportNetbox(Invocation& inv) {
  const bool dry_run = absl::GetFlag(FLAGS_dry_run);
  std::string source;
  absl::StatusOr<netbox::Export> in = ReadNetbox(inv, &source);
  if (!in.ok()) {
    std::fprintf(stderr, "dclctl %s: %s\n", inv.name.c_str(), std::string(in.status().message()).c_str());
    return ExitCodeFor(static_cast<grpc::StatusCode>(in.status().code()));
  }
  absl::StatusOr<std::map<std::string, std::string>> site_map =
      netbox::ParseSiteMap(absl::GetFlag(FLAGS_site_map));
  if (!site_map.ok()) throw UsageError(std::string(site_map.status().message()));
  absl::StatusOr<netbox::Plan> plan = netbox::MakePlan(*in, *site_map);
  if (!plan.ok()) throw UsageError(std::string(plan.status().message()));

  auto inventory = InventoryStub(inv);
  auto occupancy = StubFor<v1::OccupancyService>(inv, Service::kOccupancy);
  netbox::Applier applier(*inventory, *occupancy,
                          [&] { return MakeContext(inv.client, Service::kOccupancy); });
  netbox::ApplyOptions options;
  options.dry_run = dry_run;
  options.progress = !inv.json;
  options.run = "import " + absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  netbox::Report report;
  const grpc::Status status = applier.Apply(*plan, options, &report);
  if (!status.ok()) return ReportFailure(inv, status);
  PrintImportReport(inv, source, options.run, dry_run, report);
  // A refusal loses data and wins over drift, which loses none (dcl stays the arbiter).
  if (!report.refused.empty()) return kExitRefused;
  return report.drift.empty() ? kExitOk : kExitDrift;
}

}  // namespace

std::vector<Command> ImportCommands() {
  return {
      {{"import", "netbox"},
       "--dir DIR | --url URL --token-file FILE [--site SLUG,…] [--ca FILE]; [--site_map "
       "NB=DCL,…] [--dry_run]",
       "sites, racks, devices, placements and rack reservations from NetBox's API or saved "
       "lists; re-runs are idempotent and report drift (exit 8); exit 4 when something that "
       "takes units was refused",
       0,
       0,
       Section::kInventory,
       ImportNetbox},
  };
}

}  // namespace dcl::admin
