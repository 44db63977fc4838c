// gaia scale APP[/ROLE] --replicas N|+N|-N: sets the app's replica override for a role
// (AppRecord.scale), commits it, and runs the controllers inline: the replicas
// controller creates or removes instances (highest ordinals first) and the scheduler
// places the new ones, quota and preemption included. --dry-run runs the same
// controllers on the loaded state and prints the result without writing; --wait
// follows them until every instance of the role runs.
#include <fmt/format.h>

#include <charconv>
#include <set>

#include "controllers/controller_options.hpp"
#include "controllers/lifecycle.hpp"
#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "controllers/replicas.hpp"
#include "lib/timeline.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

// The most replicas one role may ask for: far above any cluster gaia targets, low
// enough that a typo (an extra zero or two) is caught before it creates a flood of
// pending instances.
constexpr int64_t k_max_replicas = 10000;

struct ScaleArgs {
  std::string target;
  std::string replicas;
  bool dry_run = false;
  bool wait = false;
  std::string timeout = "5m";
  std::string output = "text";
};

struct Change {
  bool relative = false;
  int64_t value = 0;  // Absolute count, or the signed delta.
};

std::optional<Change> parse_change(const std::string& text) {
  if (text.empty()) return std::nullopt;
  Change c;
  std::string_view digits = text;
  bool negative = false;
  if (digits.front() == '+' || digits.front() == '-') {
    c.relative = true;
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty() || digits.size() > 12) return std::nullopt;
  for (char ch : digits)
    if (ch < '0' || ch > '9') return std::nullopt;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), c.value);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  if (negative) c.value = -c.value;
  return c;
}

struct Decision {
  std::string tenant, app, role;
  int from = 0, to = 0;
  bool changed = false;
  Batch batch;
};

// The whole decision: which role, the new count, the record to commit. All user
// errors are reported here, before anything is written.
Result<Decision> decide(const ClusterState& st, const std::string& tenant, const std::string& target, const Change& c) {
  Decision d;
  d.tenant = tenant;
  auto slash = target.find('/');
  d.app = target.substr(0, slash);
  std::string role_name = slash == std::string::npos ? "" : target.substr(slash + 1);
  const AppRecord* app = st.find_app(tenant, d.app);
  if (!app) {
    std::vector<std::string> names;
    std::set<std::string> elsewhere;
    for (const auto& [id, a] : st.apps) {
      if (a.tenant == tenant) names.push_back(a.name);
      else if (a.name == d.app) elsewhere.insert(a.tenant);
    }
    std::string hint;
    if (auto guess = spec::did_you_mean(d.app, names)) hint = fmt::format("did you mean {}?", *guess);
    else if (!elsewhere.empty())
      hint = fmt::format("an app {} runs in tenant {}: add --tenant {}", d.app, *elsewhere.begin(), *elsewhere.begin());
    else if (names.empty()) hint = fmt::format("tenant {} has no apps; deploy one with `gaia submit DIR`", tenant);
    else hint = fmt::format("apps in tenant {}: {}", tenant, spec::join_limited(names, 10));
    return fail(Diagnostic{{}, "", fmt::format("no app '{}' in tenant {}", d.app, tenant), hint});
  }
  std::vector<std::string> roles;
  for (const auto& r : app->workload.roles) roles.push_back(r.name);
  const Role* role = nullptr;
  if (role_name.empty()) {
    if (roles.size() != 1)
      return fail(Diagnostic{{}, "", fmt::format("app {} has {} roles; name the one to scale", d.app, roles.size()),
                             fmt::format("gaia scale {}/ROLE --replicas N, with ROLE one of: {}", d.app,
                                         spec::join_limited(roles, 10))});
    role = &app->workload.roles.front();
  } else {
    for (const auto& r : app->workload.roles)
      if (r.name == role_name) role = &r;
    if (!role) {
      auto guess = spec::did_you_mean(role_name, roles);
      return fail(Diagnostic{{}, "", fmt::format("app {} has no role '{}'", d.app, role_name),
                             guess ? fmt::format("did you mean {}/{}?", d.app, *guess)
                                   : fmt::format("roles of {}: {}", d.app, spec::join_limited(roles, 10))});
    }
  }
  d.role = role->name;
  if (role->kind == "batch")
    return fail(Diagnostic{{}, "", fmt::format("role {}/{} is a batch role", d.app, d.role),
                           "batch instances run to completion and are not scaled; resubmit the app with the count you "
                           "want (e.g. `gaia submit DIR --set ...`)"});
  d.from = desired_replicas(*app, *role);
  int64_t to = c.relative ? d.from + c.value : c.value;
  if (to < 0)
    return fail(Diagnostic{{}, "--replicas", fmt::format("{}/{} has {} replica(s); {:+} would make {}", d.app, d.role, d.from,
                                                         c.value, to),
                           fmt::format("scale to 0 at the least (--replicas 0 or --replicas -{})", d.from)});
  if (to > k_max_replicas)
    return fail(Diagnostic{{}, "--replicas", fmt::format("{} replicas is more than the {} a role may have", to, k_max_replicas),
                           "check the number for a typo"});
  d.to = static_cast<int>(to);
  if (d.to == d.from) return d;
  d.changed = true;
  AppRecord changed = *app;
  changed.scale[d.role] = d.to;
  changed.op.clear();
  d.batch.put_apps.push_back(std::move(changed));
  auto& e = d.batch.event("Scaled", fmt::format("role {}: {} -> {} replica(s)", d.role, d.from, d.to));
  e.tenant = tenant;
  e.app = d.app;
  e.role = d.role;
  return d;
}

// What happened to the role's instances between `before` and `after`.
std::string format_result(const Globals& g, const Decision& d, const ClusterState& before, const ClusterState& after,
                          const Batch& run) {
  std::map<std::string, const Instance*> was, now;
  for (const auto& i : before.snapshot.instances)
    if (i.tenant == d.tenant && i.app == d.app && i.role == d.role) was[i.key()] = &i;
  for (const auto& i : after.snapshot.instances)
    if (i.tenant == d.tenant && i.app == d.app && i.role == d.role) now[i.key()] = &i;
  std::string out;
  for (const auto& [key, i] : now) {
    if (was.count(key)) continue;
    if (!i->node.empty())
      out += fmt::format("  {} {} on {}{}\n", green(g, stdout, "+"), key, i->node, i->address.empty() ? "" : " (" + i->address + ")");
    else
      out += fmt::format("  {} {} pending: {}\n", yellow(g, stdout, "+"), key, i->pending_reason);
  }
  for (auto it = was.rbegin(); it != was.rend(); ++it)
    if (!now.count(it->first))
      out += fmt::format("  {} {}{}\n", red(g, stdout, "-"), it->first, it->second->node.empty() ? "" : " (was on " + it->second->node + ")");
  for (const auto& e : run.events)
    if (e.reason == "Preempted")
      out += fmt::format("  {} {}: {}\n", yellow(g, stdout, "preempted"), e.instance, e.message);
  return out;
}

bool role_settled(const ClusterState& st, const Decision& d) {
  int running = 0, total = 0;
  for (const auto& i : st.snapshot.instances) {
    if (i.tenant != d.tenant || i.app != d.app || i.role != d.role) continue;
    ++total;
    if (serving(i)) ++running;
  }
  return total == d.to && running == d.to;
}

int run_scale(const Globals& g, const ScaleArgs& a) {
  auto change = parse_change(a.replicas);
  if (!change) {
    report_error(g, fmt::format("--replicas {}: expected a count (3), or a change (+2, -1)", a.replicas),
                 "gaia scale APP[/ROLE] --replicas N | +N | -N");
    return k_usage;
  }
  auto timeout = parse_duration(a.timeout);
  if (!timeout) return report(g, timeout.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  bool json = a.output == "json";
  ControllerContext ctx{to_millis(s.clock.now()), {}};

  if (a.dry_run) {
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    auto d = decide(*st, g.tenant, a.target, *change);
    if (!d) return report(g, d.error());
    ClusterState changed = apply_batch(*st, d->batch);
    // The options `gaia sim options` stored, as the real run reads them.
    ctx.options = stored_controller_options(*st);
    auto outcome = reconcile_with_healthy_backend(changed, ctx);
    if (json) {
      nlohmann::json j{{"app", d->app}, {"role", d->role}, {"from", d->from}, {"to", d->to}, {"dry_run", true},
                       {"events", outcome.batch.events.size()}};
      std::printf("%s\n", j.dump(2).c_str());
      return k_ok;
    }
    if (!g.quiet) {
      fmt::print("would scale {}/{}: {} -> {} replica(s)\n", d->app, d->role, d->from, d->to);
      std::fputs(format_result(g, *d, *st, outcome.after, outcome.batch).c_str(), stdout);
    }
    print_dry_run_note(g);
    return k_ok;
  }

  Decision d;
  ClusterState before;
  auto committed = ops::commit_and_reconcile(s.workspace(), [&](const ClusterState& st, Batch& b) -> Result<void> {
    auto r = decide(st, g.tenant, a.target, *change);
    if (!r) return fail(r.error());
    d = std::move(*r);
    before = st;
    b = d.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  ClusterState final_state = committed->controllers.state;
  Batch all = committed->controllers.outcome.batch;
  bool done = true;
  if (a.wait && !role_settled(final_state, d)) {
    FollowOptions fo;
    fo.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
    fo.print = false;
    auto f = follow_controllers(g, s, [&](const ClusterState& st) { return role_settled(st, d); }, fo);
    if (!f) return report(g, f.error());
    done = f->done;
    final_state = f->state;
  }
  if (json) {
    nlohmann::json j{{"app", d.app}, {"role", d.role}, {"from", d.from}, {"to", d.to}, {"op", s.op},
                     {"settled", role_settled(final_state, d)}};
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!g.quiet) {
    if (!d.changed) fmt::print("{}/{} already has {} replica(s)\n", d.app, d.role, d.to);
    else fmt::print("scaled {}/{}: {} -> {} replica(s)\n", d.app, d.role, d.from, d.to);
    std::fputs(format_result(g, d, before, final_state, all).c_str(), stdout);
    if (d.changed) fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  }
  if (!done) {
    report_error(g, fmt::format("{}/{} did not reach {} running replica(s) within {}", d.app, d.role, d.to, a.timeout),
                 fmt::format("`gaia get instances` shows the pending ones; `gaia explain INSTANCE` says why"));
    return k_error;
  }
  return k_ok;
}

}  // namespace

void register_scale(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("scale", "Set how many instances a role runs (absolute or +N/-N)");
  cmd->footer(
      "Examples:\n"
      "  gaia scale web --replicas 5              # an app with one role\n"
      "  gaia scale hdfs/datanode --replicas +2   # two more datanodes\n"
      "  gaia scale hdfs/datanode --replicas=-1 --dry-run\n"
      "  gaia scale kafka/broker --replicas 6 --wait --timeout 2m\n"
      "Scale down removes the highest ordinals first; a removed stateful instance's volumes go with it.\n"
      "Exit codes: 0 ok, 1 error (store unchanged) or --wait timed out, 2 bad --replicas.");
  auto a = std::make_shared<ScaleArgs>();
  cmd->add_option("APP", a->target, "APP, or APP/ROLE when the app has several roles")->required();
  cmd->add_option("--replicas", a->replicas, "N, +N or -N")->required()->allow_extra_args(false);
  cmd->add_flag("--dry-run", a->dry_run, "Print what would be created, placed and removed; write nothing");
  cmd->add_flag("--wait", a->wait, "Wait until every instance of the role runs");
  cmd->add_option("--timeout", a->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_scale(g, *a); });
}

}  // namespace gaia::cli
