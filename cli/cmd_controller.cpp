// gaia controller run|status: the controllers as a long-running process. Every mutating
// command already runs them once inline; `controller run` keeps them running so timers
// (restart back-off, reclamation after start-up) and outside changes are acted on with
// nobody at the keyboard. One runner per store leads (lib/leader.hpp); others wait and
// take over when it stops or dies.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cli/context.hpp"
#include "cli/controller_loop.hpp"
#include "cli/interrupt.hpp"
#include "lib/leader.hpp"
#include "ops/propagate.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

namespace {

constexpr const char* k_leader_key = "meta/controller_leader";


struct RunArgs {
  std::string interval = "1s";
  std::string lease_ttl = "10s";
  std::string for_ = "";
  bool once = false;
};

int run_controller(const Globals& g, const RunArgs& a) {
  auto interval = positive_duration("--interval", a.interval);
  if (!interval) return report(g, interval.error());
  auto ttl = positive_duration("--lease-ttl", a.lease_ttl);
  if (!ttl) return report(g, ttl.error());
  if (*ttl < std::chrono::seconds(1))
    return report_error(g, fmt::format("--lease-ttl {}: must be at least 1s", a.lease_ttl), "leases are granted in whole seconds");
  if (*interval * 2 > *ttl)
    return report_error(g, fmt::format("--interval {} is more than half of --lease-ttl {}", a.interval, a.lease_ttl),
                        "the leader renews its lease every interval; keep the interval well under the TTL");
  std::optional<std::chrono::milliseconds> run_for;
  if (!a.for_.empty()) {
    auto f = positive_duration("--for", a.for_);
    if (!f) return report(g, f.error());
    run_for = *f;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;

  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  std::string holder = fmt::format("{}:{} ({})", host, getpid(), s.op);
  LeaderElection election(*s.store, k_leader_key, holder,
                          std::chrono::duration_cast<std::chrono::seconds>(*ttl));

  // SIGINT/SIGTERM: the runner resigns and exits cleanly.
  catch_stop_signals();
  auto started = std::chrono::steady_clock::now();
  bool was_leading = false;
  std::string last_waiting_for;
  int runs = 0;
  int64_t healed_at = -1;  // Store revision of the last stale-render check.
  std::string last_heal_error;
  // A store that is briefly unreachable (an etcd restart, a leader election, a busy
  // SQLite file) is waited out: the runner says so once and tries again every interval.
  // Any other failure ends it.
  std::string outage;
  auto wait_out = [&](const Diagnostics& why) {
    std::string text = format_diagnostics(why);
    if (text != outage && !g.quiet) {
      std::printf("%s %s the store cannot be reached; retrying every %s:\n%s", s.state->now_rfc3339().c_str(),
                  yellow(g, stdout, "warning:").c_str(), a.interval.c_str(), text.c_str());
      std::fflush(stdout);
    }
    outage = text;
    nap(*interval);
  };
  while (!stop_requested()) {
    if (run_for && std::chrono::steady_clock::now() - started >= *run_for) break;
    auto lead = election.try_lead(s.state->now_rfc3339());
    if (!lead && !a.once && is_transient(lead.error().code)) {
      wait_out(Diagnostics{lead.error().to_diagnostic()});
      continue;
    }
    if (!lead) return report(g, Diagnostics{lead.error().to_diagnostic()});
    if (!*lead) {
      if (was_leading && !g.quiet) std::printf("%s lost leadership (lease expired)\n", yellow(g, stdout, "warning:").c_str());
      was_leading = false;
      auto cur = LeaderElection::current(*s.store, k_leader_key);
      std::string who = cur && *cur ? (*cur)->holder : "another runner";
      if (who != last_waiting_for && !g.quiet) {
        std::printf("waiting: %s leads the controllers of this store\n", who.c_str());
        std::fflush(stdout);
      }
      last_waiting_for = who;
      if (a.once) return k_ok;
      nap(std::min(*interval, *ttl / 3));
      continue;
    }
    if (!was_leading && !g.quiet) {
      std::printf("leading the controllers of %s as %s\n", s.context.store.c_str(), holder.c_str());
      std::fflush(stdout);
    }
    was_leading = true;
    last_waiting_for.clear();
    // Each pass gets its own operation id, so `gaia events --op` groups what one pass did.
    s.op = new_operation_id(s.clock);
    // Apps left stale by a crash between a config write and its re-render are healed
    // first, so the controllers act on the workloads the centers call for. Checked only
    // when the store moved since the last check: an idle cluster costs nothing.
    if (auto rev = s.store->revision(); rev && *rev != healed_at) {
      auto healed = ops::heal_stale_renders(s.workspace());
      if (!healed) {
        std::string why = format_diagnostics(healed.error());
        if (why != last_heal_error && !g.quiet)
          std::printf("%s cannot repair stale renders yet:\n%s", yellow(g, stdout, "warning:").c_str(), why.c_str());
        last_heal_error = why;
      } else {
        last_heal_error.clear();
        if (!healed->batch.empty() && !g.quiet) {
          std::printf("%s pass %s: repaired %zu stale render(s)\n", s.state->now_rfc3339().c_str(), s.op.c_str(),
                      healed->applied.size());
          print_controller_events(g, healed->batch);
        }
      }
      if (auto after = s.store->revision(); after) healed_at = *after;
    }
    ControllerOptions loop;
    loop.periodic = true;  // The loop runs the periodic controllers (rebalance).
    auto run = ops::run_controllers(s.workspace(), loop);
    if (!run && !a.once && is_transient(run.error())) {
      wait_out(run.error());
      continue;
    }
    if (!run) return report(g, run.error());
    if (!outage.empty() && !g.quiet) {
      std::printf("%s the store answers again\n", s.state->now_rfc3339().c_str());
      std::fflush(stdout);
    }
    outage.clear();
    ++runs;
    if (!run->outcome.batch.empty() && !g.quiet) {
      std::printf("%s pass %s: %zu event(s) by %s\n", s.state->now_rfc3339().c_str(), s.op.c_str(),
                  run->outcome.batch.events.size(), fmt::format("{}", fmt::join(run->outcome.active, ", ")).c_str());
      print_controller_events(g, run->outcome.batch);
    }
    if (!run->outcome.converged && !g.quiet)
      std::printf("%s the controllers did not converge in one run; continuing\n", yellow(g, stdout, "warning:").c_str());
    if (a.once) break;
    auto sleep = *interval;
    if (run->outcome.wake_at_ms > 0) {
      auto due = std::chrono::milliseconds(run->outcome.wake_at_ms - to_millis(s.clock.now()));
      sleep = std::clamp(due, std::chrono::milliseconds(1), *interval);
    }
    // Woken early by a new event on the timeline (a command's change, another
    // process's pass that did something); usage updates alone write no events, so two
    // loops never wake each other for nothing. Short slices keep Ctrl-C prompt.
    auto until = std::chrono::steady_clock::now() + sleep;
    while (!stop_requested()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      auto changed = s.state->wait_for_change("events/", std::min(left, std::chrono::milliseconds(250)));
      if (!changed) {
        nap(std::min(left, std::chrono::milliseconds(250)));
        continue;
      }
      if (*changed) break;
    }
  }
  if (auto r = election.resign(); !r) return report(g, Diagnostics{r.error().to_diagnostic()});
  if (!g.quiet && was_leading) std::printf("stopped after %d run(s); leadership released\n", runs);
  return k_ok;
}

int run_status(const Globals& g, const std::string& output) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto cur = LeaderElection::current(*(*session)->store, k_leader_key);
  if (!cur) return report(g, Diagnostics{cur.error().to_diagnostic()});
  if (output == "json") {
    nlohmann::json j{{"leader", nullptr}};
    if (*cur) j["leader"] = {{"holder", (*cur)->holder}, {"since", (*cur)->since}, {"lease", (*cur)->lease}};
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (!*cur) {
    std::printf("no controller runner leads this store (commands run the controllers inline; "
                "start one with `gaia controller run`)\n");
    return k_ok;
  }
  std::printf("leader: %s\nsince:  %s\nlease:  %lld\n", (*cur)->holder.c_str(), (*cur)->since.c_str(),
              static_cast<long long>((*cur)->lease));
  return k_ok;
}

}  // namespace

void register_controller(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("controller", "Run the controllers continuously (one leader per store)");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gaia controller run                       # until Ctrl-C; a second runner waits\n"
      "  gaia controller run --interval 500ms --for 1m\n"
      "  gaia controller status\n"
      "  gaia controller options --heartbeat-timeout 10s\n");
  auto a = std::make_shared<RunArgs>();
  auto* run = cmd->add_subcommand("run", "Reconcile the store continuously while leading its controllers");
  run->footer(
      "Examples:\n"
      "  gaia controller run\n"
      "  gaia controller run --once                # one pass if no other runner leads\n"
      "  gaia controller run --lease-ttl 30s --interval 2s\n"
      "Only one runner per store acts; others print who leads and wait. Ctrl-C resigns at once.");
  run->add_option("--interval", a->interval, "Time between passes (sooner when a timer is due)")->capture_default_str();
  run->add_option("--lease-ttl", a->lease_ttl, "Leadership lease; a dead leader is replaced after this long")
      ->capture_default_str();
  run->add_option("--for", a->for_, "Stop after this long (default: until interrupted)")->type_name("DURATION");
  run->add_flag("--once", a->once, "Run one pass (if leading) and exit");
  run->callback([&g, code, a] { *code = run_controller(g, *a); });

  auto output = std::make_shared<std::string>("text");
  auto* status = cmd->add_subcommand("status", "Show which runner leads the controllers of this store");
  status->footer("Examples:\n  gaia controller status\n  gaia controller status -o json\n");
  status->add_option("-o,--output", *output, "text or json")->check(CLI::IsMember({"text", "json"}));
  status->callback([&g, code, output] { *code = run_status(g, *output); });

  register_controller_options(cmd, g, code);
}

}  // namespace gaia::cli
