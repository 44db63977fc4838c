// gaia agent run|start|status|stop: the node agent of the process backend
// (docs/backends.md). It supervises the instances placed on the nodes of a local
// cluster: each pass observes the processes (phases, exit codes, health checks, usage),
// runs the controllers on that observation, commits, and starts and stops processes;
// between passes it waits for news from the processes. The instances do not belong to
// the agent: they survive it, and a restarted agent finds them again.
#include <fmt/format.h>

#include <unistd.h>

#include <chrono>
#include <vector>

#include "cli/agent_control.hpp"
#include "cli/context.hpp"
#include "cli/controller_loop.hpp"
#include "cli/interrupt.hpp"
#include "ops/runner.hpp"
#include "process/process_backend.hpp"

namespace gaia::cli {

namespace {

struct AgentArgs {
  std::string interval = "1s";
  std::string for_;
  std::string timeout = "30s";
  std::string output = "text";
};

// Opens the session and checks that its cluster runs on the process backend.
Result<std::unique_ptr<Session>> process_session(const Globals& g) {
  auto session = open_session(g);
  if (!session) return fail(session.error());
  if ((*session)->backend_name != "process")
    return fail(Diagnostic{{}, "", fmt::format("this cluster runs on the {} backend: it has no agent", (*session)->backend_name),
                           "the agent serves clusters created with `gaia cluster create --backend process`"});
  return session;
}

int run_agent(const Globals& g, const AgentArgs& a) {
  auto interval = positive_duration("--interval", a.interval);
  if (!interval) return report(g, interval.error());
  std::optional<std::chrono::milliseconds> run_for;
  if (!a.for_.empty()) {
    auto f = positive_duration("--for", a.for_);
    if (!f) return report(g, f.error());
    run_for = *f;
  }
  auto session = process_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto lock = AgentLock::acquire(run_dir_of(s.context.store), s.context.store, s.state->now_rfc3339());
  if (!lock) return report(g, lock.error());

  // SIGINT/SIGTERM: the agent finishes its pass and exits.
  catch_stop_signals();
  if (!g.quiet) {
    fmt::print("{} agent {} serving the nodes of {} (run dir {})\n", s.state->now_rfc3339(), ::getpid(), s.context.store,
               run_dir_of(s.context.store).string());
    std::fflush(stdout);
  }
  auto started = std::chrono::steady_clock::now();
  std::string last_error;
  int passes = 0;
  // The nodes this agent serves (every node of the cluster), as of the last pass: it
  // beats for each before each pass, so a node whose agent goes silent is marked down
  // by whoever runs the controllers after the heartbeat timeout (docs/backends.md).
  std::vector<std::string> served;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string agent_id = fmt::format("pid {} on {}", ::getpid(), host);
  while (!stop_requested()) {
    if (run_for && std::chrono::steady_clock::now() - started >= *run_for) break;
    s.op = new_operation_id(s.clock);
    if (served.empty())
      if (auto st = s.state->load())
        for (const auto& n : st->snapshot.nodes) served.push_back(n.name);
    if (auto beat = s.state->write_heartbeats(served, agent_id); !beat && !g.quiet)
      fmt::print("{} warning: heartbeat not written: {}", s.state->now_rfc3339(), format_diagnostics(beat.error()));
    auto run = ops::run_controllers(s.workspace());
    ++passes;
    if (auto* pb = dynamic_cast<ProcessBackend*>(s.backend.get()))
      for (const auto& w : pb->take_warnings())
        if (!g.quiet) fmt::print("{} warning: {}\n", s.state->now_rfc3339(), w);
    if (run) {
      served.clear();
      for (const auto& n : run->state->snapshot.nodes) served.push_back(n.name);
    }
    auto sleep = *interval;
    if (!run) {
      // A busy or briefly unreadable store is no reason to stop supervising: say it once
      // and try again next pass.
      std::string why = format_diagnostics(run.error());
      if (why != last_error) fmt::print("{} warning: pass failed: {}", s.state->now_rfc3339(), why);
      last_error = why;
    } else {
      last_error.clear();
      // Usage updates change the batch every pass; only passes with events are news.
      if (!run->outcome.batch.events.empty() && !g.quiet) {
        fmt::print("{} pass {}: {} event(s)\n", s.state->now_rfc3339(), s.op, run->outcome.batch.events.size());
        print_controller_events(g, run->outcome.batch);
      }
      for (const auto& e : run->backend_errors)
        if (!g.quiet) fmt::print("{} warning: {}\n", s.state->now_rfc3339(), e.to_string());
      if (run->outcome.wake_at_ms > 0) {
        auto due = std::chrono::milliseconds(run->outcome.wake_at_ms - to_millis(s.clock.now()));
        sleep = std::clamp(due, std::chrono::milliseconds(1), *interval);
      }
    }
    std::fflush(stdout);
    // Woken early when a process changes (exits, a health check is due), or when the
    // timeline moves (a command or a controller runner decided something the processes
    // must follow); a look at the store's watch costs nothing while it is quiet.
    auto until = std::chrono::steady_clock::now() + sleep;
    while (!stop_requested() && std::chrono::steady_clock::now() < until) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (s.backend->wait(std::min(left, std::chrono::milliseconds(200)))) break;
      if (auto changed = s.state->wait_for_change("events/", std::chrono::milliseconds(0)); changed && *changed) break;
    }
  }
  // A deliberate stop is not a failure: its heartbeats go with it, so its nodes are no
  // longer judged by them and stay up (only an agent that dies leaves stale beats that
  // take its nodes down after the timeout). One agent serves every node of its store.
  if (auto r = s.store->del_prefix("heartbeats/"); !r && !g.quiet)
    fmt::print("{} warning: heartbeats not removed ({}): its nodes go down after the heartbeat timeout\n",
               s.state->now_rfc3339(), r.error().to_string());
  if (!g.quiet) fmt::print("{} agent {} stopped after {} pass(es); its instances keep running\n", s.state->now_rfc3339(),
                           ::getpid(), passes);
  return k_ok;
}

int run_start(const Globals& g, const AgentArgs& a) {
  if (auto i = positive_duration("--interval", a.interval); !i) return report(g, i.error());
  auto session = process_session(g);
  if (!session) return report(g, session.error());
  auto agent = ensure_agent(g, (*session)->context.store, a.interval);
  if (!agent) return report(g, agent.error());
  if (!g.quiet) fmt::print("{}\n", agent->message);
  return k_ok;
}

int run_status(const Globals& g, const AgentArgs& a) {
  auto session = process_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto st = agent_status(run_dir_of(s.context.store));
  if (!st) return report(g, st.error());
  // Read only: observing would run health checks and tidy copy dirs, which a status
  // command must not do. Live processes come from the run dir, running instances from
  // the store (what the agent last observed).
  auto state = s.state->load();
  if (!state) return report(g, state.error());
  auto* backend = dynamic_cast<ProcessBackend*>(s.backend.get());
  size_t live = 0, ready = 0;
  for (const auto& i : state->snapshot.instances) {
    if (i.state == InstanceState::Running) ++ready;
    if (!backend) continue;
    for (const auto& c : backend->copies_of(i.key()))
      if (!c.removed && (c.phase == CopyPhase::Starting || c.phase == CopyPhase::Running)) ++live;
  }
  if (a.output == "json") {
    nlohmann::json j{{"running", st->running},
                     {"pid", st->running ? nlohmann::json(st->pid) : nlohmann::json(nullptr)},
                     {"since", st->since},
                     {"log", st->log.string()},
                     {"run_dir", run_dir_of(s.context.store).string()},
                     {"processes", live},
                     {"ready", ready}};
    fmt::print("{}\n", j.dump(2));
    return k_ok;
  }
  if (!st->running)
    fmt::print("no agent serves this store: instances are started and stopped only while a gaia command runs\n"
               "  start one with `gaia agent start`\n");
  else
    fmt::print("agent:     pid {}, since {}\nlog:       {}\n", st->pid, st->since, st->log.string());
  fmt::print("run dir:   {}\nprocesses: {} live; instances running: {}\n", run_dir_of(s.context.store).string(), live, ready);
  return k_ok;
}

int run_stop(const Globals& g, const AgentArgs& a) {
  auto timeout = positive_duration("--timeout", a.timeout);
  if (!timeout) return report(g, timeout.error());
  auto session = process_session(g);
  if (!session) return report(g, session.error());
  auto stopped = stop_agent(run_dir_of((*session)->context.store), *timeout);
  if (!stopped) return report(g, stopped.error());
  if (g.quiet) return k_ok;
  if (!*stopped) fmt::print("no agent was running\n");
  else fmt::print("agent (pid {}) stopped; its instances keep running (`gaia agent start` resumes supervising)\n",
                  (*stopped)->pid);
  return k_ok;
}

}  // namespace

void register_agent(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("agent", "The node agent of a process cluster: supervises its local processes");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gaia cluster create --backend process --nodes 2   # starts the agent\n"
      "  gaia agent status\n"
      "  gaia agent stop && gaia agent start\n"
      "  gaia agent run --interval 500ms                   # in the foreground\n");
  auto a = std::make_shared<AgentArgs>();
  auto* run = cmd->add_subcommand("run", "Supervise the instances in the foreground (until Ctrl-C)");
  run->add_option("--interval", a->interval, "Longest time between passes (sooner when a process changes)")
      ->capture_default_str();
  run->add_option("--for", a->for_, "Stop after this long (default: until interrupted)")->type_name("DURATION");
  run->footer("Examples:\n  gaia agent run\n  gaia agent run --interval 500ms --for 1m\n");
  run->callback([&g, code, a] { *code = run_agent(g, *a); });

  auto* start = cmd->add_subcommand("start", "Start the agent in the background (no-op when one runs)");
  start->add_option("--interval", a->interval, "Longest time between passes")->capture_default_str();
  start->footer("Examples:\n  gaia agent start\n  gaia agent start --interval 2s\n");
  start->callback([&g, code, a] { *code = run_start(g, *a); });

  auto* status = cmd->add_subcommand("status", "Show the agent and how many processes run");
  status->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  status->footer("Examples:\n  gaia agent status\n  gaia agent status -o json\n");
  status->callback([&g, code, a] { *code = run_status(g, *a); });

  auto* stop = cmd->add_subcommand("stop", "Stop the agent (its instances keep running)");
  stop->add_option("--timeout", a->timeout, "SIGKILL the agent if it has not stopped after this long")
      ->capture_default_str();
  stop->footer("Examples:\n  gaia agent stop\n  gaia agent stop --timeout 5s\n");
  stop->callback([&g, code, a] { *code = run_stop(g, *a); });
}

}  // namespace gaia::cli
