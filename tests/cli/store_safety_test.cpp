// A wrong or vanished store never becomes an empty cluster (issue 14, item 3): only
// `gaia cluster create` makes a store, every other command on a missing one is an
// error naming it; long-running commands stop when their store file is deleted or
// replaced; a store this user may read but not write serves the reading commands.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/cli/e2e_util.hpp"
#include "tests/store/etcd_server.hpp"

using namespace gaia::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

bool wait_for_file_text(const fs::path& file, const std::string& text, std::chrono::milliseconds limit) {
  return eventually([&] { return contains(Scratch::slurp(file), text); }, limit);
}


// The store file and the files SQLite keeps beside it.
void remove_store(const std::string& store) {
  for (const char* suffix : {"", "-wal", "-shm", "-reserve"}) fs::remove(store + suffix);
}

}  // namespace

TEST_CASE("a mistyped --store or GAIA_STORE is an error naming the path, and creates nothing", "[e2e][store]") {
  Scratch s;
  // A fresh install: the default context's store does not exist yet.
  auto r = expect_exit(s, 1, {"get", "apps"});
  CHECK(contains(r.err, "no store at " + (s.dir() / "state" / "gaia" / "gaia.db").string()));
  CHECK(contains(r.err, "(the store of context default)"));
  CHECK(contains(r.err, "only `gaia cluster create` makes a store"));
  CHECK_FALSE(fs::exists(s.dir() / "state" / "gaia" / "gaia.db"));

  StoreCli real(s);
  real.ok({"cluster", "create", "--nodes", "2"});
  CHECK(fs::exists(real.store));

  for (auto args : std::vector<std::vector<std::string>>{{"get", "nodes"},
                                                         {"events"},
                                                         {"status"},
                                                         {"node", "cordon", "node-1"},
                                                         {"controller", "run", "--once"},
                                                         {"store", "check"},
                                                         {"store", "backup", "b.db"}}) {
    args.insert(args.begin(), {"--store", "stroe.db"});
    r = expect_exit(s, 1, args);
    CHECK(contains(r.err, "no store at stroe.db (named by --store): the file does not exist"));
    CHECK(contains(r.err, "check the path given by --store"));
  }
  CHECK_FALSE(fs::exists(s.dir() / "stroe.db"));
  CHECK_FALSE(fs::exists(s.dir() / "b.db"));

  // GAIA_STORE is named as the culprit too, and the hint lists the contexts' stores.
  r = s.gaia({"get", "apps"}, {{"GAIA_STORE", (s.dir() / "other" / "x.db").string()}});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "(named by GAIA_STORE)"));
  CHECK(contains(r.err, "default (" + (s.dir() / "state" / "gaia" / "gaia.db").string() + ")"));
  CHECK_FALSE(fs::exists(s.dir() / "other"));

  // cluster create is what makes one; then every command works on it.
  StoreCli fresh(s);
  fresh.store = (s.dir() / "new" / "fresh.db").string();
  fresh.ok({"cluster", "create", "--nodes", "2"});
  CHECK(contains(fresh.ok({"get", "nodes"}).out, "node-1"));
  fresh.ok({"store", "check"});
}

TEST_CASE("an empty file where the store should be is not a store", "[e2e][store]") {
  Scratch s;
  s.write("empty.db", "");
  auto r = expect_exit(s, 1, {"--store", "empty.db", "get", "apps"});
  CHECK(contains(r.err, "is an empty file, not a gaia store"));
  CHECK(fs::file_size(s.dir() / "empty.db") == 0);
}

TEST_CASE("events -f stops with an error when its store file is deleted", "[e2e][store][events]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  pid_t pid = s.spawn({"--store", g.store, "events", "-f"}, "follow");
  if (!wait_for_file_text(s.dir() / "follow.out", "NodeAdded", 10s)) exit_within(pid, 0ms);
  remove_store(g.store);
  int code = exit_within(pid, 10s);
  INFO(Scratch::slurp(s.dir() / "follow.out") << Scratch::slurp(s.dir() / "follow.err"));
  CHECK(code == 1);
  CHECK(contains(Scratch::slurp(s.dir() / "follow.err"), "was deleted while gaia had it open"));
}

TEST_CASE("controller run stops with an error when its store file is replaced", "[e2e][store][controller]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  StoreCli other(s);
  other.store = (s.dir() / "other.db").string();
  other.ok({"cluster", "create", "--nodes", "3"});
  pid_t pid = s.spawn({"--store", g.store, "controller", "run", "--interval", "200ms"}, "runner");
  if (!wait_for_file_text(s.dir() / "runner.out", "leading the controllers", 10s)) exit_within(pid, 0ms);
  // The way a careless copy replaces a file: another file renamed over it.
  fs::rename(other.store, g.store);
  int code = exit_within(pid, 10s);
  INFO(Scratch::slurp(s.dir() / "runner.out") << Scratch::slurp(s.dir() / "runner.err"));
  CHECK(code == 1);
  CHECK(contains(Scratch::slurp(s.dir() / "runner.err"), "was replaced by another file while gaia had it open"));
}

TEST_CASE("a store this user may read but not write serves reading commands, writing ones say it is read-only",
          "[e2e][store]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  g.ok({"events", "--retention", "1000"});
  // Root may write any file, so as root the reading user is `nobody`, through setpriv;
  // otherwise the file and its folder lose their write permission.
  const bool root = ::geteuid() == 0;
  if (root && !fs::exists("/usr/bin/setpriv")) {
    WARN("skipped: running as root without setpriv to become another user");
    return;
  }
  fs::permissions(s.dir(), fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                               fs::perms::others_exec,
                  fs::perm_options::add);
  fs::path cache = s.dir() / "cache-ro";
  fs::create_directories(cache);
  fs::permissions(cache, fs::perms::all);
  if (!root) {
    fs::permissions(g.store, fs::perms::owner_write, fs::perm_options::remove);
    fs::permissions(s.dir(), fs::perms::owner_write, fs::perm_options::remove);
  }
  auto as_reader = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--store", g.store});
    std::map<std::string, std::string> env = {{"XDG_CACHE_HOME", cache.string()},
                                              {"XDG_STATE_HOME", (s.dir() / "state-ro").string()}};
    if (!root) return s.gaia(args, env);
    args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", GAIA_BINARY});
    return s.run("/usr/bin/setpriv", args, env);
  };
  auto r = as_reader({"get", "nodes"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(contains(r.out, "node-1"));
  r = as_reader({"events"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "NodeAdded"));
  r = as_reader({"status"});
  CHECK(r.code == 0);
  r = as_reader({"store", "check"});
  CHECK(r.code == 0);

  r = as_reader({"node", "cordon", "node-1"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "is read-only: you may read it but not write it"));
  CHECK(contains(r.err, "reading commands (get, describe, events, status) work"));
  r = as_reader({"events", "--retention", "10"});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "is read-only"));
  if (!root) fs::permissions(s.dir(), fs::perms::owner_write, fs::perm_options::add);
  // Nothing was written.
  auto st = g.load();
  for (const auto& n : st.snapshot.nodes) CHECK(n.state == gaia::NodeState::Ready);
}

TEST_CASE("etcd: a cluster where no gaia cluster was created is no store, cluster create makes it",
          "[e2e][store][etcd]") {
  gaia::testing::EtcdServer server;
  Scratch s;
  const std::string& endpoint = server.endpoint();
  std::string url = "etcd://" + endpoint.substr(endpoint.find("://") + 3);
  auto r = expect_exit(s, 1, {"--store", url, "get", "apps"});
  CHECK(contains(r.err, fmt::format("no store at {} (named by --store)", url)));
  CHECK(contains(r.err, "no gaia cluster was ever created in it"));
  CHECK(contains(r.err, "only `gaia cluster create` makes a store"));
  // A context may name it before the cluster exists: adding one only checks etcd answers.
  expect_exit(s, 0, {"context", "add", "team", "--store", url});
  r = expect_exit(s, 1, {"--context", "team", "get", "nodes"});
  CHECK(contains(r.err, "(the store of context team)"));
  expect_exit(s, 0, {"--context", "team", "cluster", "create", "--nodes", "2"});
  CHECK(contains(expect_exit(s, 0, {"--context", "team", "get", "nodes"}).out, "node-1"));
}
