// gaia logs INSTANCE [-f] [--tail N] [--previous]: what an instance's process wrote to
// stdout and stderr (process backend). Each copy of an instance (every start, restart
// or move) has its own size-bounded log; `--previous` shows the copy before the newest,
// as after a crash, and `-f` follows the newest across rotations and on to the next copy
// when the instance restarts.
#include <fmt/format.h>

#include <limits>
#include <optional>


#include "cli/context.hpp"
#include "cli/interrupt.hpp"
#include "lib/instance_ref.hpp"
#include "process/logs.hpp"
#include "process/process_backend.hpp"

namespace gaia::cli {

namespace {

struct LogsArgs {
  std::string instance;
  bool follow = false;
  int tail = -1;  // -1: everything kept.
  bool previous = false;
};

int run_logs(const Globals& g, const LogsArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto* backend = dynamic_cast<ProcessBackend*>(s.backend.get());
  if (!backend)
    return report_error(g, fmt::format("this cluster runs on the {} backend, which runs no processes: there are no logs",
                                       s.backend_name),
                        "logs exist for clusters created with `gaia cluster create --backend process`");
  std::string key = instance_key_from_ref(a.instance, g.tenant);
  auto copies = backend->copies_of(key);
  if (copies.empty()) {
    auto state = s.state->load();
    if (state && !state->find_instance(key))
      return report_error(g, fmt::format("no instance {}", a.instance), "list instances with `gaia get instances`");
    return report_error(g, fmt::format("instance {} has not been started yet: no logs", key),
                        "see why with `gaia describe instance " + key + "`");
  }
  if (a.previous && copies.size() < 2)
    return report_error(g, fmt::format("instance {} has had one copy only: there is no previous log", key),
                        "drop --previous to see the current one");
  const CopyInfo& copy = copies[a.previous ? 1 : 0];
  // With -f the follower starts before the tail is read, so a line written in between
  // is not lost (it may show twice, never zero times); it yields only newer lines, and
  // a copy started later from its beginning.
  std::optional<process::LogFollower> follower;
  if (a.follow && !a.previous) follower.emplace(backend->run_dir() / key, process::LogFollower::From::End);
  size_t n = a.tail < 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(a.tail);
  for (const auto& line : process::tail_lines(copy.log, n)) fmt::print("{}\n", line);
  std::fflush(stdout);
  if (!follower) return k_ok;
  catch_stop_signals(/*with_sigpipe=*/true);
  std::string current = copy.dir.string();
  while (!stop_requested()) {
    for (const auto& line : follower->next(std::chrono::milliseconds(200))) {
      if (line.copy_dir.string() != current) {
        current = line.copy_dir.string();
        if (!g.quiet) fmt::print(stderr, "--- {} restarted: {} ---\n", key, line.copy_dir.filename().string());
      }
      fmt::print("{}\n", line.text);
    }
    if (std::fflush(stdout) != 0) break;
  }
  return k_ok;
}

}  // namespace

void register_logs(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<LogsArgs>();
  auto* cmd = app.add_subcommand("logs", "Print what an instance's process wrote (process backend)");
  cmd->footer(
      "Examples:\n"
      "  gaia logs 0.server.kv.default\n"
      "  gaia logs kv/server/0 -f              # follow, across restarts\n"
      "  gaia logs kv/server/0 --tail 20\n"
      "  gaia logs kv/server/0 --previous      # the copy before the newest (after a crash)\n");
  cmd->add_option("INSTANCE", a->instance, "The instance: its key, DNS name, or APP/ROLE/ORDINAL")->required();
  cmd->add_flag("-f,--follow", a->follow, "Keep printing new lines, also after the instance restarts");
  cmd->add_option("--tail", a->tail, "Only the last N lines")->check(CLI::NonNegativeNumber);
  cmd->add_flag("-p,--previous", a->previous, "The log of the copy before the newest");
  cmd->callback([&g, code, a] { *code = run_logs(g, *a); });
}

}  // namespace gaia::cli
