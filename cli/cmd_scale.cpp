// gaia scale APP[/ROLE] --replicas N | --by +N|-N: sets the app's replica override for a
// role (AppRecord.scale), commits it with the removals a scale down makes, and runs the
// controllers inline: the replicas controller creates the missing instances (giving
// stateful ones back the volumes an earlier scale down kept) and the scheduler places
// them, quota and preemption included. The count is absolute; a change is spelled --by
// with its sign, so "-5" can never be read as a count. A stateful instance removed keeps
// its volumes unless --delete-volumes. The template renders the new count first
// (ops/scale_check.hpp) and a count it refuses is not written. --dry-run runs the same
// decision and controllers on the loaded state and prints the result, volumes included,
// without writing; --wait follows the controllers until every instance of the role runs.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "controllers/controller_options.hpp"
#include "controllers/lifecycle.hpp"
#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "controllers/replicas.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"
#include "ops/scale_check.hpp"
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
  std::string by;
  bool delete_volumes = false;
  bool reset = false;
  bool dry_run = false;
  bool wait = false;
  std::string timeout = "5m";
  std::string output = "text";
};

struct Change {
  bool reset = false;  // --reset: drop the override, follow the spec's count.
  bool relative = false;
  int64_t value = 0;  // Absolute count, or the signed delta.
};

// Digits only (at most 12, so the value cannot overflow), into `out`.
bool parse_digits(std::string_view digits, int64_t& out) {
  if (digits.empty() || digits.size() > 12) return false;
  for (char ch : digits)
    if (ch < '0' || ch > '9') return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc{} && end == digits.data() + digits.size();
}

// The change --replicas or --by asks for, or the usage error saying how to spell it.
// --replicas is a count and nothing else: "-5" there once meant "five fewer" and emptied
// a role that had five, so a sign is refused with the --by spelling of what it might
// have meant. --by insists on its sign for the same reason the other way round.
std::expected<Change, Diagnostic> parse_change(const ScaleArgs& a) {
  Change c;
  if (a.reset) {
    c.reset = true;
    return c;
  }
  if (a.replicas.empty() && a.by.empty())
    return std::unexpected(Diagnostic{{}, "", "say how many replicas: --replicas N or --by +N / --by -N (or --reset)",
                                      "gaia scale APP[/ROLE] --replicas N (the count) | --by +N | --by -N (a change)"});
  if (!a.replicas.empty()) {
    std::string_view text = a.replicas;
    char sign = text.front();
    if (sign == '-' || sign == '+') {
      int64_t n = 0;
      if (parse_digits(text.substr(1), n))
        return std::unexpected(Diagnostic{
            {}, "--replicas",
            sign == '-' ? fmt::format("--replicas {}: a replica count cannot be negative", a.replicas)
                        : fmt::format("--replicas {}: --replicas takes the count itself, not a change", a.replicas),
            sign == '-' ? fmt::format("to remove {} replica(s), use --by -{}; --replicas sets the count (--replicas 0 "
                                      "removes every one)",
                                      n, n)
                        : fmt::format("to add {} replica(s), use --by +{}; --replicas {} sets the count to {}", n, n, n, n)});
    }
    if (!parse_digits(text, c.value))
      return std::unexpected(Diagnostic{{}, "--replicas", fmt::format("--replicas {}: expected a count (3)", a.replicas),
                                        "gaia scale APP[/ROLE] --replicas N, or --by +N / --by -N for a change"});
    return c;
  }
  std::string_view text = a.by;
  char sign = text.front();
  c.relative = true;
  if ((sign != '-' && sign != '+') || !parse_digits(text.substr(1), c.value)) {
    int64_t n = 0;
    if (parse_digits(text, n))
      return std::unexpected(Diagnostic{{}, "--by", fmt::format("--by {}: a change needs its sign", a.by),
                                        fmt::format("--by +{} adds {} replica(s), --by -{} removes {}; --replicas {} sets "
                                                    "the count",
                                                    n, n, n, n, n)});
    return std::unexpected(Diagnostic{{}, "--by", fmt::format("--by {}: expected a signed change (+2, -1)", a.by),
                                      "gaia scale APP[/ROLE] --by +N | --by -N, or --replicas N for the count"});
  }
  if (sign == '-') c.value = -c.value;
  return c;
}

struct Decision {
  std::string tenant, app, role;
  int from = 0, to = 0;
  bool changed = false;
  std::string note;  // Said instead of a result when nothing changes (--reset without an override).
  ScalePlan plan;
};

// The whole decision: which role, the new count, the record to commit. All user
// errors are reported here, before anything is written.
Result<Decision> decide(const ClusterState& st, const std::string& tenant, const std::string& target, const Change& c,
                        bool delete_volumes) {
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
  if (c.reset) {
    // Back to the spec's count. The override goes even when it equals that count, so
    // later updates of the spec are followed again.
    if (!app->scale.count(role->name)) {
      d.to = d.from;
      d.note = fmt::format("{}/{} has no scale override: it follows the spec's {} replica(s)", d.app, d.role, d.from);
      return d;
    }
    d.to = role->replicas;
    d.plan = plan_scale(st, *app, *role, d.to, delete_volumes);
    Batch& b = d.plan.batch;
    auto it = std::find_if(b.put_apps.begin(), b.put_apps.end(),
                           [&](const AppRecord& x) { return x.tenant == app->tenant && x.name == app->name; });
    if (it == b.put_apps.end()) {
      b.put_apps.push_back(*app);
      b.put_apps.back().op.clear();  // The commit stamps the operation making this change.
      it = b.put_apps.end() - 1;
    }
    it->scale.erase(role->name);
    auto& e = b.event("ScaleReset", fmt::format("role {}: the scale override of {} replica(s) is removed; the spec's {} "
                                                "replica(s) hold again",
                                                d.role, app->scale.at(role->name), role->replicas));
    e.tenant = app->tenant;
    e.app = app->name;
    e.role = role->name;
    d.changed = true;
    return d;
  }
  int64_t to = c.relative ? d.from + c.value : c.value;
  if (to < 0)
    return fail(Diagnostic{{}, "--by", fmt::format("{}/{} has {} replica(s); --by {:+} would make {}", d.app, d.role, d.from,
                                                   c.value, to),
                           fmt::format("scale to 0 at the least (--by -{} or --replicas 0)", d.from)});
  if (to > k_max_replicas)
    return fail(Diagnostic{{}, c.relative ? "--by" : "--replicas",
                           fmt::format("{} replicas is more than the {} a role may have", to, k_max_replicas),
                           "check the number for a typo"});
  d.to = static_cast<int>(to);
  d.plan = plan_scale(st, *app, *role, d.to, delete_volumes);
  d.changed = d.plan.changed();
  return d;
}

// The template's say on the new count (ops/scale_check.hpp), when the count changes.
Result<void> check_template(const ops::Workspace& ws, const ClusterState& st, const Decision& d) {
  if (d.to == d.from) return {};
  return ops::check_scale_render(ws, st, *st.find_app(d.tenant, d.app), d.role, d.to);
}

// Every volume the scale keeps, deletes or gives back, one line each, so nothing
// happens to data without a line saying so.
std::string format_volumes(const Globals& g, const Decision& d) {
  std::string out;
  auto lines = [&](const std::vector<ScaleVolume>& vs, const std::string& what, bool say_earlier) {
    for (const auto& v : vs)
      out += fmt::format("  {} volume {} of {} {} ({}{}){}\n", what, v.volume, v.instance, volume_place(v.node, v.group),
                         format_bytes(v.size_bytes), v.node.empty() ? "" : " in " + v.group,
                         say_earlier && v.earlier ? ", kept earlier" : "");
  };
  lines(d.plan.deleted, red(g, stdout, "delete"), true);
  lines(d.plan.kept, yellow(g, stdout, "keep"), true);
  lines(d.plan.reattached, green(g, stdout, "reattach"), false);
  if (!d.plan.kept.empty())
    out += fmt::format("  kept volumes hold their data and their space; `gaia scale {}/{} --replicas {} --delete-volumes` "
                       "deletes them\n",
                       d.app, d.role, d.to);
  return out;
}

nlohmann::json volumes_json(const Decision& d) {
  auto list = [](const std::vector<ScaleVolume>& vs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& v : vs)
      a.push_back({{"instance", v.instance}, {"volume", v.volume}, {"node", v.node}, {"group", v.group},
                   {"size_bytes", v.size_bytes}, {"kept_earlier", v.earlier}});
    return a;
  };
  return {{"kept", list(d.plan.kept)}, {"deleted", list(d.plan.deleted)}, {"reattached", list(d.plan.reattached)}};
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
  auto change = parse_change(a);
  if (!change) {
    report_error(g, change.error().message, change.error().hint);
    return k_usage;
  }
  auto timeout = parse_duration(a.timeout);
  if (!timeout) return report(g, timeout.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  bool json = a.output == "json";
  ControllerContext ctx{to_millis(s.clock.now()), {}};
  const ops::Workspace ws = s.workspace();

  if (a.dry_run) {
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    auto d = decide(*st, g.tenant, a.target, *change, a.delete_volumes);
    if (!d) return report(g, d.error());
    if (auto ok = check_template(ws, *st, *d); !ok) return report(g, ok.error());
    ClusterState changed = apply_batch(*st, d->plan.batch);
    // The options `gaia sim options` stored, as the real run reads them.
    ctx.options = stored_controller_options(*st);
    auto outcome = reconcile_with_healthy_backend(changed, ctx);
    if (json) {
      nlohmann::json j{{"app", d->app}, {"role", d->role}, {"from", d->from}, {"to", d->to}, {"dry_run", true},
                       {"volumes", volumes_json(*d)}, {"events", d->plan.batch.events.size() + outcome.batch.events.size()}};
      std::printf("%s\n", j.dump(2).c_str());
      return k_ok;
    }
    if (!g.quiet) {
      fmt::print("would scale {}/{}: {} -> {} replica(s)\n", d->app, d->role, d->from, d->to);
      std::fputs(format_result(g, *d, *st, outcome.after, outcome.batch).c_str(), stdout);
      std::fputs(format_volumes(g, *d).c_str(), stdout);
    }
    print_dry_run_note(g);
    return k_ok;
  }

  Decision d;
  ClusterState before;
  auto committed = ops::commit_and_reconcile(ws, [&](const ClusterState& st, Batch& b) -> Result<void> {
    auto r = decide(st, g.tenant, a.target, *change, a.delete_volumes);
    if (!r) return fail(r.error());
    // Inside the decision, on the state it commits against: a conflict re-decides and
    // checks again (a render-cache hit unless the app changed meanwhile).
    if (auto ok = check_template(ws, st, *r); !ok) return fail(ok.error());
    d = std::move(*r);
    before = st;
    b = d.plan.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  ClusterState final_state = *committed->controllers.state;
  Batch all = d.plan.batch;
  merge_batch(all, committed->controllers.outcome.batch);
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
                     {"volumes", volumes_json(d)}, {"settled", role_settled(final_state, d)}};
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!g.quiet) {
    if (!d.note.empty()) fmt::print("{}\n", d.note);
    else if (d.to == d.from && !d.changed) fmt::print("{}/{} already has {} replica(s)\n", d.app, d.role, d.to);
    else if (d.to == d.from) fmt::print("{}/{}: scale override removed; {} replica(s), as the spec says\n", d.app, d.role, d.to);
    else fmt::print("scaled {}/{}: {} -> {} replica(s)\n", d.app, d.role, d.from, d.to);
    std::fputs(format_result(g, d, before, final_state, all).c_str(), stdout);
    std::fputs(format_volumes(g, d).c_str(), stdout);
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
  auto* cmd = app.add_subcommand("scale", "Set how many instances a role runs (--replicas N, or --by +N/-N)");
  cmd->footer(
      "Examples:\n"
      "  gaia scale web --replicas 5              # an app with one role\n"
      "  gaia scale hdfs/datanode --by +2         # two more datanodes\n"
      "  gaia scale hdfs/datanode --by -1 --dry-run\n"
      "  gaia scale db --replicas 1 --delete-volumes   # and delete the data of those removed\n"
      "  gaia scale kafka/broker --replicas 6 --wait --timeout 2m\n"
      "  gaia scale hdfs/datanode --reset          # follow the spec's count again\n"
      "A count set here is an override: it outlives updates of the spec until --reset removes it.\n"
      "Scale down removes the highest ordinals first. A removed stateful instance's volumes are kept on their\n"
      "node and given back when its ordinal returns; --delete-volumes deletes them (and those kept earlier).\n"
      "The app's template renders the new count first; a count it refuses is not written.\n"
      "Exit codes: 0 ok, 1 error (store unchanged) or --wait timed out, 2 bad --replicas or --by.");
  auto a = std::make_shared<ScaleArgs>();
  cmd->add_option("APP", a->target, "APP, or APP/ROLE when the app has several roles")->required();
  auto* replicas =
      cmd->add_option("--replicas", a->replicas, "The count, 0 or more (no sign: a change is --by)")->type_name("N");
  auto* by = cmd->add_option("--by", a->by, "A change of the count, with its sign: +N or -N")->type_name("+N|-N");
  replicas->allow_extra_args(false);
  by->allow_extra_args(false);
  replicas->excludes(by);
  auto* reset = cmd->add_flag("--reset", a->reset,
                              "Remove the role's scale override: the spec's count holds again (also after updates)");
  reset->excludes(replicas);
  reset->excludes(by);
  cmd->add_flag("--delete-volumes", a->delete_volumes,
                "Delete the volumes of the stateful instances removed, and those kept for ordinals beyond the count");
  cmd->add_flag("--dry-run", a->dry_run, "Print what would be created, placed, removed and kept; write nothing");
  cmd->add_flag("--wait", a->wait, "Wait until every instance of the role runs");
  cmd->add_option("--timeout", a->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_scale(g, *a); });
}

}  // namespace gaia::cli
