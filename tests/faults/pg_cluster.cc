#include "tests/faults/pg_cluster.h"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace dcl::faults {
namespace {

constexpr char kPgBin[] = "/usr/lib/postgresql/15/bin";

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("no free port");
  }
  const int port = ntohs(address.sin_port);
  close(fd);
  return port;
}

// The server refuses to run as root: as root, every command runs as postgres, from / (which
// postgres can always enter), like deploy/pg-cluster.
std::string AsOwner(const std::string& command) {
  if (geteuid() != 0) return command;
  return absl::StrCat("cd / && /usr/sbin/runuser -u postgres -- ", command);
}

void Run(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

}  // namespace

OwnCluster::OwnCluster(int max_connections) : max_connections_(max_connections) {
  char dir[] = "/tmp/dcl-faults-pg.XXXXXX";
  if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = dir;
  if (geteuid() == 0) {
    const passwd* postgres = getpwnam("postgres");
    if (postgres == nullptr || chown(dir, postgres->pw_uid, postgres->pw_gid) != 0) {
      throw std::runtime_error("cannot hand " + dir_ + " to the postgres user");
    }
  }
  port_ = FreePort();
  Run(AsOwner(absl::StrCat(kPgBin, "/initdb -D ", dir_, "/data -U dcl --auth=trust -E UTF8 ",
                           "--locale=C.UTF-8 >", dir_, "/initdb.log 2>&1")));
  Start();
}

OwnCluster::~OwnCluster() {
  std::system(AsOwner(absl::StrCat(kPgBin, "/pg_ctl -D ", dir_,
                                   "/data -m immediate -w -t 60 stop >/dev/null 2>&1"))
                  .c_str());
  std::system(absl::StrCat("rm -rf ", dir_).c_str());
}

std::string OwnCluster::conninfo() const {
  return absl::StrCat("host=127.0.0.1 port=", port_, " user=dcl");
}

void OwnCluster::PgCtl(const std::string& arguments) {
  // Default durability: fsync, synchronous_commit and full_page_writes stay on.
  const std::string options =
      absl::StrCat("-c listen_addresses=127.0.0.1 -p ", port_,
                   " -c unix_socket_directories='' -c max_connections=", max_connections_,
                   " -c shared_buffers=128MB");
  Run(AsOwner(absl::StrCat(kPgBin, "/pg_ctl -D ", dir_, "/data -l ", dir_,
                           "/postgres.log -o \"", options, "\" -w -t 60 ", arguments,
                           " >/dev/null")));
}

void OwnCluster::Start() { PgCtl("start"); }
void OwnCluster::FastRestart() { PgCtl("-m fast restart"); }
void OwnCluster::CrashStop() { PgCtl("-m immediate stop"); }

}  // namespace dcl::faults
