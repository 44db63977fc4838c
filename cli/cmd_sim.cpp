// gaia sim: the sim backend's knobs. `gaia sim usage` edits the usage model (what each
// copy uses, as a fraction of its request, with spikes) that the sim backend reports as
// observed usage; `gaia sim fail` makes a running copy exit or fail; `gaia sim options`
// tunes the run-time controllers (reclamation start-up and margin, restart back-off cap).
// Each records its change with an event, then runs the controllers inline (observing
// the backend first, so they see what the change did); --wait follows them. The sim's
// world lives in lib/sim_backend.hpp; this file parses, calls it, commits and prints.
#include <fmt/format.h>

#include <cmath>

#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "cli/table.hpp"
#include "controllers/controller_options.hpp"
#include "lib/sim_backend.hpp"
#include "lib/instance_ref.hpp"
#include "lib/timeline.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

// Fractions above this are surely typos (1000% of the request).
constexpr double k_max_fraction = 10.0;

std::string percent_text(double f) { return fmt::format("{:g}%", std::round(f * 1000.0) / 10.0); }

std::string duration_text(int64_t ms) {
  if (ms == 0) return "0s";
  if (ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

std::string fractions_text(const UsageFractions& f) {
  std::vector<std::string> parts;
  if (f.cpu) parts.push_back("cpu " + percent_text(*f.cpu));
  if (f.memory) parts.push_back("memory " + percent_text(*f.memory));
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string spike_text(const UsageRule& r, int64_t now_ms) {
  if (r.spike.empty()) return "-";
  std::string f = fractions_text(r.spike);
  if (r.spike_until_ms == 0) return f + " until cleared";
  if (!r.spike_active(now_ms)) return f + " (ended)";
  return fmt::format("{} for {} more", f, duration_text(r.spike_until_ms - now_ms));
}

// --wait and --timeout of the commands that run the controllers.
struct Follow {
  bool wait = false;
  std::string timeout = "5m";
};

// The session's backend as the sim, or an error for contexts with another backend.
Result<SimBackend*> sim_of(Session& s) {
  auto* sim = dynamic_cast<SimBackend*>(s.backend.get());
  if (!sim)
    return fail(Diagnostic{{}, "", fmt::format("context {} uses the {} backend, not sim", s.context.name, s.backend->name()),
                           "`gaia sim` drives the simulated cluster only; switch with `gaia context use`"});
  return sim;
}

Diagnostics backend_diag(const BackendError& e) { return {Diagnostic{{}, "", e.to_string(), ""}}; }

// Runs the controllers inline once the command's change is committed, printing what
// they did.
Result<ops::ControllerRun> run_after(const Globals& g, Session& s, bool print, bool periodic = false) {
  ControllerOptions base;
  base.periodic = periodic;
  auto run = ops::run_controllers(s.workspace(), base);
  if (!run) return fail(run.error());
  if (print) print_controller_events(g, run->outcome.batch);
  return run;
}

// ---------------------------------------------------------------- gaia sim usage

struct UsageArgs {
  std::string target;
  bool all = false, list = false, clear = false, end_spike = false;
  std::optional<double> cpu, memory, spike_cpu, spike_memory;
  std::string spike_for;
  Follow follow;
  std::string output = "text";
};

struct UsageTarget {
  std::string key;  // Rule key: "*", "tenant/app", "tenant/app/role", or an instance key.
  std::string tenant, app, role, instance;  // For the event's objects.
};

// Resolves what the user typed to a rule key; errors come with a hint.
Result<UsageTarget> resolve_target(const ClusterState& st, const Globals& g, const UsageArgs& a) {
  UsageTarget t;
  if (a.all || a.target == "*") {
    t.key = "*";
    return t;
  }
  std::string key = instance_key_from_ref(a.target, g.tenant);
  if (const Instance* i = st.find_instance(key)) {
    t.key = key;
    t.tenant = i->tenant;
    t.app = i->app;
    t.role = i->role;
    t.instance = key;
    return t;
  }
  if (a.target.find('.') != std::string::npos || std::count(a.target.begin(), a.target.end(), '/') > 1) {
    if (auto d = unknown_instance(st, a.target, key)) return fail(*d);
  }
  auto slash = a.target.find('/');
  t.tenant = g.tenant;
  t.app = a.target.substr(0, slash);
  t.role = slash == std::string::npos ? "" : a.target.substr(slash + 1);
  const AppRecord* app = st.find_app(t.tenant, t.app);
  if (!app) {
    std::vector<std::string> names;
    for (const auto& [id, rec] : st.apps)
      if (rec.tenant == t.tenant) names.push_back(rec.name);
    auto guess = spec::did_you_mean(t.app, names);
    return fail(Diagnostic{{}, "TARGET", fmt::format("no app '{}' in tenant {}", t.app, t.tenant),
                           guess ? fmt::format("did you mean {}?", *guess)
                           : names.empty()
                               ? fmt::format("tenant {} has no apps; use --all to set the default for every instance",
                                             t.tenant)
                               : fmt::format("apps in tenant {}: {}", t.tenant, spec::join_limited(names, 10))});
  }
  t.key = t.tenant + "/" + t.app;
  if (t.role.empty()) return t;
  std::vector<std::string> roles;
  for (const auto& r : app->workload.roles) roles.push_back(r.name);
  if (std::find(roles.begin(), roles.end(), t.role) == roles.end()) {
    auto guess = spec::did_you_mean(t.role, roles);
    return fail(Diagnostic{{}, "TARGET", fmt::format("app {} has no role '{}'", t.app, t.role),
                           guess ? fmt::format("did you mean {}/{}?", t.app, *guess)
                                 : fmt::format("roles of {}: {}", t.app, spec::join_limited(roles, 10))});
  }
  t.key += "/" + t.role;
  return t;
}

struct UsageChange {
  UsageTarget target;
  SimUsageModel model;
  std::string summary;
  bool changed = false;
};

// The new model and its event, from the loaded state. All user errors surface here,
// before anything is written.
Result<UsageChange> decide_usage(const ClusterState& st, const SimUsageModel& current, const Globals& g,
                                 const UsageArgs& a, int64_t now_ms, int64_t spike_ms) {
  UsageChange c;
  c.model = current;
  if (a.clear && a.target.empty() && !a.all) {
    c.changed = !c.model.rules.empty();
    c.model.rules.clear();
    c.summary = "usage model cleared: no usage is observed";
  } else {
    auto t = resolve_target(st, g, a);
    if (!t) return fail(t.error());
    c.target = *t;
    if (a.clear) {
      c.changed = c.model.rules.erase(t->key) > 0;
      c.summary = c.changed ? fmt::format("usage rule for {} removed", t->key) : fmt::format("no usage rule for {}", t->key);
    } else {
      UsageRule r = c.model.rules.count(t->key) ? c.model.rules.at(t->key) : UsageRule{};
      if (a.cpu) r.base.cpu = a.cpu;
      if (a.memory) r.base.memory = a.memory;
      if (a.end_spike) {
        r.spike = {};
        r.spike_until_ms = 0;
      }
      if (a.spike_cpu || a.spike_memory) {
        r.spike = {a.spike_cpu, a.spike_memory};
        r.spike_until_ms = spike_ms > 0 ? now_ms + spike_ms : 0;
      }
      auto old = c.model.rules.find(t->key);
      c.changed = old == c.model.rules.end() || !(old->second == r);
      c.model.rules[t->key] = r;
      c.summary = fmt::format("usage of {}: {}", t->key, fractions_text(r.base));
      if (!r.spike.empty())
        c.summary += fmt::format("; spike {}", spike_ms > 0 ? fmt::format("{} for {}", fractions_text(r.spike),
                                                                           duration_text(spike_ms))
                                                            : spike_text(r, now_ms));
    }
  }
  return c;
}

int run_usage_list(const Globals& g, Session& s, const UsageArgs& a) {
  auto sim = sim_of(s);
  if (!sim) return report(g, sim.error());
  auto model = (*sim)->usage_model();
  if (!model) return report(g, backend_diag(model.error()));
  int64_t now = to_millis(s.clock.now());
  if (a.output == "json") {
    nlohmann::json j = *model;
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (model->empty()) {
    if (!g.quiet) std::printf("no usage model: usage is not observed (set one with `gaia sim usage APP --cpu F --memory F`)\n");
    return k_ok;
  }
  Table t({"TARGET", "CPU", "MEMORY", "SPIKE"});
  auto cell = [](const std::optional<double>& f) { return f ? percent_text(*f) : std::string("-"); };
  for (const auto& [key, r] : model->rules)
    t.add_row({key == "*" ? "* (default)" : key, cell(r.base.cpu), cell(r.base.memory), spike_text(r, now)});
  std::fputs(t.render(table_options_for(stdout)).c_str(), stdout);
  return k_ok;
}

bool settled(const ClusterState& st, const Session& s) {
  ControllerContext ctx{to_millis(s.clock.now()), stored_controller_options(st)};
  auto out = reconcile(st, ctx);
  return out.batch.empty() && out.wake_at_ms == 0;
}

int finish_follow(const Globals& g, Session& s, const Follow& f, const std::function<bool(const ClusterState&)>& done,
                  const ClusterState& current, bool print) {
  if (!f.wait || done(current)) return k_ok;
  auto timeout = parse_duration(f.timeout);
  if (!timeout) return report(g, timeout.error());
  FollowOptions fo;
  fo.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  fo.print = print;
  auto r = follow_controllers(g, s, done, fo);
  if (!r) return report(g, r.error());
  if (!r->done) {
    report_error(g, fmt::format("the controllers did not settle within {}", f.timeout),
                 "`gaia events -f` shows what they are doing; `gaia get instances` what is pending");
    return k_error;
  }
  return k_ok;
}

int run_usage(const Globals& g, const UsageArgs& a) {
  bool setting = a.cpu || a.memory || a.spike_cpu || a.spike_memory || a.end_spike;
  auto usage_error = [&](const std::string& msg, const std::string& hint) {
    report_error(g, msg, hint);
    return static_cast<int>(k_usage);
  };
  if (a.list && (setting || a.clear || !a.target.empty() || a.all))
    return usage_error("--list takes no target and no other flag", "gaia sim usage --list");
  if (a.clear && setting) return usage_error("--clear cannot be combined with usage flags", "clear first, then set");
  if (!a.list && !a.clear && !setting)
    return usage_error("nothing to set", "give --cpu, --memory, --spike-cpu or --spike-memory (fractions of the "
                                         "request: 0.4 = 40%), or --list, or --clear");
  if (!a.list && !a.clear && a.target.empty() && !a.all)
    return usage_error("no target", "name an APP, APP/ROLE or INSTANCE, or give --all for every instance");
  if (a.all && !a.target.empty()) return usage_error("--all takes no target", "gaia sim usage --all --cpu 0.5");
  const std::vector<std::pair<const char*, std::optional<double>>> fractions = {
      {"--cpu", a.cpu}, {"--memory", a.memory}, {"--spike-cpu", a.spike_cpu}, {"--spike-memory", a.spike_memory}};
  for (const auto& [name, v] : fractions)
    if (v && (!std::isfinite(*v) || *v < 0 || *v > k_max_fraction))
      return usage_error(fmt::format("{} {}: expected a fraction of the request between 0 and {}", name, *v,
                                     k_max_fraction),
                         "0.4 means 40% of the request; 1.5 means 150%");
  if (!a.spike_for.empty() && !a.spike_cpu && !a.spike_memory)
    return usage_error("--for needs --spike-cpu or --spike-memory", "gaia sim usage web --spike-memory 1.5 --for 30s");
  int64_t spike_ms = 0;
  if (!a.spike_for.empty()) {
    auto d = parse_duration(a.spike_for);
    if (!d) return report(g, d.error());
    spike_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
    if (spike_ms <= 0) return usage_error(fmt::format("--for {}: must be positive", a.spike_for), "e.g. --for 30s");
  }
  if (!a.follow.timeout.empty())
    if (auto t = parse_duration(a.follow.timeout); !t) return report(g, t.error());

  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  if (a.list) return run_usage_list(g, s, a);

  int64_t now = to_millis(s.clock.now());
  auto sim = sim_of(s);
  if (!sim) return report(g, sim.error());
  auto current = (*sim)->usage_model();
  if (!current) return report(g, backend_diag(current.error()));
  UsageChange change;
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    auto c = decide_usage(st, *current, g, a, now, spike_ms);
    if (!c) return fail(c.error());
    change = std::move(*c);
    if (!change.changed) return {};
    auto& e = b.event("UsageModel", change.summary);
    e.tenant = change.target.tenant;
    e.app = change.target.app;
    e.role = change.target.role;
    e.instance = change.target.instance;
    return {};
  });
  if (!committed) return report(g, committed.error());
  if (change.changed)
    if (auto set = (*sim)->set_usage_model(change.model); !set) return report(g, backend_diag(set.error()));
  bool json = a.output == "json";
  if (!json && !g.quiet) fmt::print("{}{}\n", change.summary, change.changed ? "" : " (unchanged)");
  auto run = run_after(g, s, !json);
  if (!run) return report(g, run.error());
  int rc = finish_follow(g, s, a.follow, [&](const ClusterState& st) { return settled(st, s); }, *run->state, !json);
  if (json) {
    nlohmann::json j{{"changed", change.changed}, {"summary", change.summary}, {"model", nlohmann::json(change.model)},
                     {"op", s.op}, {"controller_events", run->outcome.batch.events.size()}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  return rc;
}

// ---------------------------------------------------------------- gaia sim fail

struct FailArgs {
  std::string instance;
  std::string reason;
  bool internal = false;
  std::optional<int> exit_code;  // Exit with this code instead of failing.
  Follow follow;
  std::string output = "text";
};

int run_fail(const Globals& g, const FailArgs& a) {
  if (auto t = parse_duration(a.follow.timeout); !t) return report(g, t.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  std::string key = instance_key_from_ref(a.instance, g.tenant);
  std::string reason = !a.reason.empty() ? a.reason : a.internal ? "node agent crashed" : "exited with code 1 (gaia sim fail)";
  auto sim = sim_of(s);
  if (!sim) return report(g, sim.error());
  auto st0 = s.state->load();
  if (!st0) return report(g, st0.error());
  if (auto d = unknown_instance(*st0, a.instance, key)) return report(g, Diagnostics{*d});
  if (const Instance* i = st0->find_instance(key); !i || i->state != InstanceState::Running)
    return report(g, Diagnostics{Diagnostic{{}, "INSTANCE",
                                fmt::format("instance {} is {}, not running: only a running instance can fail", key,
                                            i ? instance_state_name(i->state) : "unknown"),
                                "pick a Running instance from `gaia get instances`"}});
  // The copy ends in the simulated cluster; the controllers learn of it by observing
  // the backend, exactly as they would of a real crash.
  if (a.exit_code) reason = a.reason.empty() ? fmt::format("exited with code {}", *a.exit_code) : a.reason;
  auto ended = a.exit_code ? (*sim)->end_copy(key, *a.exit_code, *a.exit_code == 0 ? "" : reason, a.internal)
                           : (*sim)->end_copy(key, a.internal ? 0 : 1, reason, a.internal);
  if (!ended) return report(g, backend_diag(ended.error()));
  bool json = a.output == "json";
  if (!json && !g.quiet)
    fmt::print("{} failed: {}{}\n", key, reason, a.internal ? " (internal: does not count against retry_times)" : "");
  auto run = run_after(g, s, !json);
  if (!run) return report(g, run.error());
  // Done when the instance runs again, or its role was given up on.
  auto done = [&](const ClusterState& st) {
    const Instance* i = st.find_instance(key);
    if (!i) return true;
    if (serving(*i)) return true;
    const AppRecord* app = st.find_app(i->tenant, i->app);
    return app && app->failed_roles.count(i->role) > 0;
  };
  int rc = finish_follow(g, s, a.follow, done, *run->state, !json);
  auto st = s.state->load();
  if (!st) return report(g, st.error());
  const Instance* i = st->find_instance(key);
  const AppRecord* app = i ? st->find_app(i->tenant, i->app) : nullptr;
  std::string role_failed = app && i && app->failed_roles.count(i->role) ? app->failed_roles.at(i->role) : "";
  if (json) {
    nlohmann::json j{{"instance", key}, {"reason", reason}, {"internal", a.internal}, {"op", s.op}};
    if (i) {
      j["state"] = std::string(instance_state_name(i->state));
      j["restarts"] = i->restarts;
      if (i->restart_at_ms) j["restart_at"] = format_rfc3339(Clock::time_point(std::chrono::milliseconds(i->restart_at_ms)));
    }
    if (!role_failed.empty()) j["role_failed"] = role_failed;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!g.quiet && i) {
    if (!role_failed.empty())
      fmt::print("role {}/{} failed: {}\n", i->app, i->role, role_failed);
    else if (i->state == InstanceState::Failed && i->restart_at_ms)
      // Only commands that work on a Failed instance: `gaia sim fail` refuses one.
      fmt::print("restarting at {} (the first gaia command that runs the controllers after that, or `gaia controller "
                 "run`, restarts it)\n",
                 format_rfc3339(Clock::time_point(std::chrono::milliseconds(i->restart_at_ms))));
    else
      fmt::print("{} is {} (restarts {})\n", key, instance_state_name(i->state), i->restarts);
    fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  }
  return rc;
}

// ---------------------------------------------------------------- gaia sim options

struct OptionsArgs {
  std::string reclaim_startup, max_backoff, heartbeat_timeout, rebalance_period;
  std::optional<double> reclaim_margin, rebalance_target;
  std::optional<int> rebalance_budget;
  bool reset = false;
  std::string output = "text";
};

// "off" or "at most 20 move(s) every 10m, until 90% allocation".
std::string rebalance_text(const ControllerOptions& o) {
  if (o.rebalance_budget <= 0) return fmt::format("off (period {} when on)", duration_text(o.rebalance_period_ms));
  std::string out = fmt::format("at most {} move(s) every {}", o.rebalance_budget, duration_text(o.rebalance_period_ms));
  if (o.rebalance_target_pct > 0) out += fmt::format(", until {:g}% allocation", o.rebalance_target_pct);
  return out;
}

int run_options(const Globals& g, const OptionsArgs& a) {
  auto ms_of = [&](const std::string& text, const char* flag) -> Result<std::optional<int64_t>> {
    if (text.empty()) return std::optional<int64_t>{};
    auto d = parse_duration(text);
    if (!d)
      // The flag is the diagnostic's path, printed before the message: not repeated in it.
      return fail(Diagnostic{{}, flag, fmt::format("'{}' is not a duration", text), "e.g. 0s, 30s, 5m, 1h30m"});
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
    if (ms < 0) return fail(Diagnostic{{}, flag, fmt::format("'{}' must not be negative", text), "e.g. 0s, 30s, 5m"});
    return std::optional<int64_t>{ms};
  };
  auto startup = ms_of(a.reclaim_startup, "--reclaim-startup");
  auto backoff = ms_of(a.max_backoff, "--max-backoff");
  auto heartbeat = ms_of(a.heartbeat_timeout, "--heartbeat-timeout");
  auto period = ms_of(a.rebalance_period, "--rebalance-period");
  // Every duration that does not parse is named at once; like the range checks below,
  // a flag's bad value is a usage error.
  Diagnostics bad;
  for (const auto* d : {&startup, &backoff, &heartbeat, &period})
    if (!*d) bad.insert(bad.end(), d->error().begin(), d->error().end());
  if (!bad.empty()) {
    report(g, bad);
    return k_usage;
  }
  if (*heartbeat && **heartbeat < 1000) {
    report_error(g, fmt::format("--heartbeat-timeout {}: must be at least 1s", a.heartbeat_timeout),
                 "a node is marked down when its agent stays silent this long; agents beat every --interval (1s)");
    return k_usage;
  }
  if (a.reclaim_margin && (!std::isfinite(*a.reclaim_margin) || *a.reclaim_margin < 0 || *a.reclaim_margin > k_max_fraction)) {
    report_error(g, fmt::format("--reclaim-margin {}: expected a fraction between 0 and {}", *a.reclaim_margin, k_max_fraction),
                 "0.2 keeps 20% above observed usage");
    return k_usage;
  }
  if (*period && **period < 1000) {
    report_error(g, fmt::format("--rebalance-period {}: must be at least 1s", a.rebalance_period),
                 "the rebalance controller moves at most --rebalance-budget instances per period, e.g. 10m");
    return k_usage;
  }
  if (a.rebalance_budget && (*a.rebalance_budget < 0 || *a.rebalance_budget > 1'000'000)) {
    report_error(g, fmt::format("--rebalance-budget {}: expected 0 (off) to 1000000 moves per period", *a.rebalance_budget),
                 "e.g. --rebalance-budget 20");
    return k_usage;
  }
  if (a.rebalance_target && (!std::isfinite(*a.rebalance_target) || *a.rebalance_target < 0 || *a.rebalance_target > 100)) {
    report_error(g, fmt::format("--rebalance-target {}: expected a percentage between 0 (none) and 100", *a.rebalance_target),
                 "e.g. --rebalance-target 90 stops once the nodes in use are 90% allocated");
    return k_usage;
  }
  bool setting = *startup || *backoff || *heartbeat || a.reclaim_margin || *period || a.rebalance_budget ||
                 a.rebalance_target;
  if (a.reset && setting) {
    report_error(g, "--reset cannot be combined with other options", "reset first, then set");
    return k_usage;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  ControllerOptions result;
  bool changed = false;
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    ControllerOptions current = stored_controller_options(st);
    result = a.reset ? ControllerOptions{} : current;
    if (*startup) result.reclaim_startup_ms = **startup;
    if (*backoff) result.max_backoff_ms = **backoff;
    if (*heartbeat) result.heartbeat_timeout_ms = **heartbeat;
    if (a.reclaim_margin) result.reclaim_margin = *a.reclaim_margin;
    if (*period) result.rebalance_period_ms = **period;
    if (a.rebalance_budget) result.rebalance_budget = *a.rebalance_budget;
    if (a.rebalance_target) result.rebalance_target_pct = *a.rebalance_target;
    changed = (setting || a.reset) && controller_options_json(result) != controller_options_json(current);
    if (!changed) return {};
    b.put_settings[k_controller_options_setting] = controller_options_json(result);
    b.event("OptionsChanged",
            fmt::format("controller options: reclaim start-up {}, reclaim margin {}, max back-off {}, heartbeat timeout {}, "
                        "rebalance {}",
                        duration_text(result.reclaim_startup_ms), percent_text(result.reclaim_margin),
                        duration_text(result.max_backoff_ms), duration_text(result.heartbeat_timeout_ms),
                        rebalance_text(result)));
    return {};
  });
  if (!committed) return report(g, committed.error());
  bool json = a.output == "json";
  if (json) {
    std::printf("%s\n", controller_options_json(result).dump(2).c_str());
  } else if (!g.quiet) {
    fmt::print("reclaim start-up   {}\nreclaim margin     {}\nmax back-off       {}\nheartbeat timeout  {}\nrebalance          {}\n",
               duration_text(result.reclaim_startup_ms), percent_text(result.reclaim_margin),
               duration_text(result.max_backoff_ms), duration_text(result.heartbeat_timeout_ms), rebalance_text(result));
  }
  if (!changed) return k_ok;
  auto run = run_after(g, s, !json, true);
  if (!run) return report(g, run.error());
  return k_ok;
}

void add_follow(CLI::App* cmd, Follow& f, const std::string& what) {
  cmd->add_flag("--wait", f.wait, what);
  cmd->add_option("--timeout", f.timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
}

}  // namespace

void register_controller_options(CLI::App* parent, Globals& g, int* code) {
  const std::string cmd = fmt::format("gaia {} options", parent->get_name());
  auto* opts = parent->add_subcommand("options", "Show or set the controllers' tunables (kept in the store)");
  opts->footer(fmt::format(
      "Examples:\n"
      "  {0}                                  # show them\n"
      "  {0} --reclaim-startup 0s --reclaim-margin 0.1\n"
      "  {0} --max-backoff 30s\n"
      "  {0} --heartbeat-timeout 10s\n"
      "  {0} --rebalance-budget 20 --rebalance-period 10m --rebalance-target 90\n"
      "  {0} --reset\n"
      "Exit codes: 0 ok, 1 error, 2 bad flags.",
      cmd));
  auto oa = std::make_shared<OptionsArgs>();
  opts->add_option("--reclaim-startup", oa->reclaim_startup, "Time a prod instance keeps its full request (default 60s)");
  opts->add_option("--reclaim-margin", oa->reclaim_margin, "Reserve usage * (1 + margin) after start-up (default 0.2)");
  opts->add_option("--max-backoff", oa->max_backoff, "Highest restart back-off (default 5m)");
  opts->add_option("--heartbeat-timeout", oa->heartbeat_timeout,
                   "Mark a node down when its agent sends no heartbeat this long (default 30s)");
  opts->add_option("--rebalance-budget", oa->rebalance_budget,
                   "Defragment continuously: at most N moves per period (default 0: off)")
      ->type_name("N");
  opts->add_option("--rebalance-period", oa->rebalance_period, "How often the rebalance controller runs (default 10m)");
  opts->add_option("--rebalance-target", oa->rebalance_target,
                   "Stop moving once the nodes in use are this percent allocated (default 0: as far as it goes)")
      ->type_name("PCT");
  opts->add_flag("--reset", oa->reset, "Back to the defaults");
  opts->add_option("-o,--output", oa->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  opts->callback([&g, code, oa] { *code = run_options(g, *oa); });
}

void register_sim(CLI::App& app, Globals& g, int* code) {
  auto* sim = app.add_subcommand("sim", "Drive the sim backend (usage model, failures, controller tuning); judge policies");
  sim->require_subcommand(1);
  sim->footer(
      "Examples:\n"
      "  gaia sim usage --all --cpu 0.3 --memory 0.4\n"
      "  gaia sim usage hbase/regionserver --spike-memory 1.5 --for 30s\n"
      "  gaia sim fail 0.broker.kafka.default --reason 'disk full'\n"
      "  gaia sim options --reclaim-startup 0s\n"
      "  gaia sim compact --machines 1000 --seeds 5");

  auto* usage = sim->add_subcommand("usage", "Set what instances use, as fractions of their request (with spikes)");
  usage->footer(
      "Examples:\n"
      "  gaia sim usage --all --cpu 0.3 --memory 0.4      # the default for every instance\n"
      "  gaia sim usage web --cpu 0.5                      # every role of app web (memory unchanged)\n"
      "  gaia sim usage hdfs/datanode --memory 0.8         # one role\n"
      "  gaia sim usage 0.datanode.hdfs.default --cpu 1.2  # one instance\n"
      "  gaia sim usage hbase --spike-memory 1.5 --for 30s # a spike; without --for it lasts until --end-spike\n"
      "  gaia sim usage --list\n"
      "  gaia sim usage --clear [TARGET]\n"
      "The most specific rule wins per field (instance > role > app > --all); a spike overrides base values.\n"
      "With no rule an instance's usage is not observed (reservations stay at the request).\n"
      "Exit codes: 0 ok, 1 error (store unchanged) or --wait timed out, 2 bad flags.");
  auto ua = std::make_shared<UsageArgs>();
  usage->add_option("TARGET", ua->target, "APP, APP/ROLE or INSTANCE (in --tenant)");
  usage->add_flag("--all", ua->all, "Set the default rule, for every instance");
  usage->add_option("--cpu", ua->cpu, "CPU usage as a fraction of the request (0.4 = 40%)");
  usage->add_option("--memory", ua->memory, "Memory usage as a fraction of the request");
  usage->add_option("--spike-cpu", ua->spike_cpu, "CPU during a spike, as a fraction of the request");
  usage->add_option("--spike-memory", ua->spike_memory, "Memory during a spike, as a fraction of the request");
  usage->add_option("--for", ua->spike_for, "How long the spike lasts (e.g. 30s); default: until --end-spike");
  usage->add_flag("--end-spike", ua->end_spike, "End the target's spike now");
  usage->add_flag("--list", ua->list, "Print the usage model");
  usage->add_flag("--clear", ua->clear, "Remove the target's rule, or every rule when no target is given");
  add_follow(usage, ua->follow, "Follow the controllers until nothing is left to do (spikes over, start-up periods done)");
  usage->add_option("-o,--output", ua->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  usage->callback([&g, code, ua] { *code = run_usage(g, *ua); });

  auto* failc = sim->add_subcommand("fail", "Make a running instance exit; the restart controller restarts it");
  failc->footer(
      "Examples:\n"
      "  gaia sim fail 0.web.web.default\n"
      "  gaia sim fail web/web/0 --reason 'exit code 137' --wait\n"
      "  gaia sim fail 0.broker.kafka.default --internal   # gaia's own fault: not counted\n"
      "Restarts back off exponentially (backoff * 2^restarts, capped by `gaia sim options --max-backoff`)\n"
      "up to the role's retry_times; then the role is marked failed. Internal failures do not count.\n"
      "Exit codes: 0 ok, 1 error (store unchanged) or --wait timed out.");
  auto fa = std::make_shared<FailArgs>();
  failc->add_option("INSTANCE", fa->instance, "Instance key, DNS name, or app/role/ordinal")->required();
  failc->add_option("--reason", fa->reason, "Why it exited (shown in events and describe)");
  failc->add_option("--exit-code", fa->exit_code,
                    "Exit with this code instead (0 finishes a batch instance: Succeeded)")->type_name("N");
  failc->add_flag("--internal", fa->internal, "A failure of gaia itself (node agent crash): does not spend retry_times");
  add_follow(failc, fa->follow, "Follow the controllers until the instance runs again or its role fails");
  failc->add_option("-o,--output", fa->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  failc->callback([&g, code, fa] { *code = run_fail(g, *fa); });

  register_controller_options(sim, g, code);
  register_sim_compact(sim, g, code);
  register_sim_replay(sim, g, code);
}

}  // namespace gaia::cli
