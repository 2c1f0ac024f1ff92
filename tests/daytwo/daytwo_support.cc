#include "tests/daytwo/daytwo_support.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dcl::daytwo {

std::string DeployScript(const std::string& name) {
  for (const char* root_var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* root = std::getenv(root_var); root != nullptr && *root != '\0') {
      const std::string path = std::string(root) + "/dcl/deploy/" + name;
      if (access(path.c_str(), X_OK) == 0) return path;
    }
  }
  const std::string path = "deploy/" + name;
  if (access(path.c_str(), X_OK) == 0) return path;
  throw std::runtime_error("deploy/" + name + " not found: run from the checkout's root");
}

std::string Shell(const std::string& command) {
  std::FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    throw std::runtime_error(absl::StrCat("`", command, "` failed (", status, "):\n", output));
  }
  return output;
}

ScratchDir::ScratchDir(bool keep) : keep_(keep) {
  char pattern[] = "/tmp/dcl-daytwo.XXXXXX";
  if (mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
  chmod(path_.c_str(), 0755);  // the postgres user enters it to reach its clusters
}

ScratchDir::~ScratchDir() {
  if (keep_) {
    std::printf("kept %s\n", path_.c_str());
  } else {
    std::system(("rm -rf " + path_).c_str());
  }
}

Cluster::Cluster(std::string dir, const std::string& archive) : dir_(std::move(dir)) {
  Shell(DeployScript("pg-cluster") + " init " + dir_);
  if (!archive.empty()) {
    Shell(DeployScript("pg-backup") + " enable-archiving " + dir_ + " " + archive);
  }
  port_ = std::stoi(std::string(absl::StripAsciiWhitespace(Shell(DeployScript("free-port")))));
  Shell(DeployScript("pg-cluster") + " start " + dir_ + " " + std::to_string(port_));
}

Cluster::~Cluster() {
  std::system((DeployScript("pg-cluster") + " stop " + dir_ + " >/dev/null 2>&1").c_str());
}

std::string Cluster::Url(const std::string& dbname) const {
  return absl::StrCat("host=127.0.0.1 port=", port_, " user=dcl dbname=", dbname);
}

std::string PostgresTime(WallClock::time_point t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%E6S+00", absl::FromChrono(t), absl::UTCTimeZone());
}

}  // namespace dcl::daytwo
