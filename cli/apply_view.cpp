#include "cli/apply_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>

#include "cli/table.hpp"

namespace gaia::cli {

using json = nlohmann::json;

void ApplyFlags::add_to(CLI::App* cmd, bool with_prune) {
  cmd->add_option("-f,--filename", paths, "App directory or folder of them (repeatable)")->type_name("PATH");
  cmd->add_option("--source", source,
                  "Name of the source owning what this set creates (default: the -f paths); prune acts on it")
      ->type_name("NAME");
  cmd->add_option("--tenant", tenant, "Tenant to apply in (default: the global --tenant)")
      ->type_name("TENANT")
      ->check(tenant_validator());
  if (with_prune)
    cmd->add_flag("--prune", prune, "Also delete apps this source created that are no longer in the set");
  flags.add_to(cmd);
}

Result<ops::SetRequest> ApplyFlags::request(const Globals& g) const {
  if (!flags.running_file.empty())
    return fail(Diagnostic{{}, "--running", "--running is not used by apply, diff or plan --out",
                           "the set is resolved against the apps running in the store"});
  ops::SetRequest r;
  r.paths = paths;
  r.source = source;
  r.tenant = tenant_or(g);
  r.prune = prune;
  r.render = flags.settings(g);
  return r;
}

namespace {

std::string shown(const json& v, size_t max = 70) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (v.is_string() && (s.empty() || s.find_first_of(" \t\n\"") != std::string::npos)) s = v.dump();
  if (max != SIZE_MAX && s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

// Two long values that share a long prefix are shown from a little before where they
// differ, so the change is visible rather than cut off ("...,2.broker...:9092" twice).
std::pair<std::string, std::string> shown_pair(const json& a, const json& b, size_t max = 70) {
  std::string x = shown(a, SIZE_MAX), y = shown(b, SIZE_MAX);
  if (x.size() <= max && y.size() <= max) return {x, y};
  size_t common = 0;
  while (common < x.size() && common < y.size() && x[common] == y[common]) ++common;
  size_t from = common > 20 ? common - 20 : 0;
  auto cut = [&](const std::string& s) {
    std::string out = from > 0 ? "..." + s.substr(from) : s;
    if (out.size() > max) out = out.substr(0, max - 3) + "...";
    return out;
  };
  return {cut(x), cut(y)};
}

// A secret change shows no value at all (not even the mask) unless the values were
// kept for `gaia diff --show-secrets`; then it is marked, so it is not pasted around.
std::string change_line(const FieldChange& c, bool show_secrets) {
  if (c.secret && !show_secrets) return fmt::format("{}: (secret, {})", c.path, c.op);
  std::string mark = c.secret ? " (secret)" : "";
  if (c.op == "added") return fmt::format("{}: added {}{}", c.path, shown(c.after), mark);
  if (c.op == "removed") return fmt::format("{}: removed (was {}){}", c.path, shown(c.before), mark);
  auto [before, after] = shown_pair(c.before, c.after);
  return fmt::format("{}: {} -> {}{}", c.path, before, after, mark);
}

std::string landing(const InstanceLanding& l) {
  if (l.node.empty()) return fmt::format("{} pending: {}", l.instance, l.pending_reason.empty() ? "not scheduled yet" : l.pending_reason);
  return fmt::format("{} -> {}{}", l.instance, l.node, l.address.empty() ? "" : " (" + l.address + ")");
}

std::string roles_summary(const AppRecord* rec) {
  if (!rec) return "";
  std::vector<std::string> parts;
  for (const auto& r : rec->workload.roles) parts.push_back(fmt::format("{} x{}", r.name, r.replicas));
  return fmt::format("{}", fmt::join(parts, ", "));
}

const char* mark(const std::string& action) {
  if (action == "deploy") return "+";
  if (action == "update") return "~";
  if (action == "prune") return "-";
  if (action == "keep") return "!";
  return "=";
}

}  // namespace

std::string format_apply_plan(const Globals& g, const ApplyPlan& plan, const std::string& tenant,
                              const std::string& source, const ApplyView& view) {
  std::string text;
  auto line = [&](const std::string& s) { text += s + "\n"; };
  const char* verb = view.dry_run ? "plan for" : plan.changed() ? "applied to" : "nothing to apply to";
  line(bold(g, stdout, fmt::format("{} tenant {}, source {} (store revision {}):", verb, tenant, source, plan.revision)));
  for (const auto& c : plan.apps) {
    std::string head = fmt::format("{} {} {}", mark(c.action), c.name, c.version);
    if (c.action == "update" && c.previous_version != c.version)
      head = fmt::format("~ {} {} -> {}", c.name, c.previous_version, c.version);
    std::string what = c.action;
    if (c.action == "reuse") what = "reuse (running, not changed by this apply)";
    if (c.action == "keep") what = "kept, not pruned: " + c.note;
    std::string coloured = c.action == "deploy"   ? green(g, stdout, head)
                           : c.action == "update" ? yellow(g, stdout, head)
                           : c.action == "prune"  ? red(g, stdout, head)
                           : c.action == "keep"   ? yellow(g, stdout, head)
                                                  : dim(g, stdout, head);
    line(fmt::format("{}  {}", coloured, what));
    if (c.action == "deploy") line("    roles: " + roles_summary(plan.after.find_app(c.tenant, c.name)));
    for (const auto& ch : c.changes) line("    " + change_line(ch, view.show_secrets));
    for (const auto& dep : c.rerendered_by) line(fmt::format("    re-rendered: {}'s outputs change", dep));
    if (!c.note.empty() && c.action != "keep") line("    note: " + c.note);
    if (c.action == "update")
      line(fmt::format("    instances: {} added, {} removed, {} rolled out to the new render in batches", c.added.size(),
                       c.removed.size(), c.rolling.size()));
    if (c.action == "prune") {
      line(fmt::format("    instances removed: {}", c.removed.size()));
      for (size_t k = 0; k < c.removed.size() && k < view.max_instances; ++k) line("      " + c.removed[k]);
      if (c.removed.size() > view.max_instances)
        line(fmt::format("      ... and {} more (-o json lists all)", c.removed.size() - view.max_instances));
    }
    for (size_t k = 0; k < c.landings.size() && k < view.max_instances; ++k) line("      " + landing(c.landings[k]));
    if (c.landings.size() > view.max_instances)
      line(fmt::format("      ... and {} more (-o json lists all)", c.landings.size() - view.max_instances));
  }
  bool any_affected = false;
  for (const auto& r : plan.affected) {
    if (r.placed.empty() && r.preempted.empty()) continue;
    if (!any_affected) line(bold(g, stdout, "\nother apps affected:"));
    any_affected = true;
    for (const auto& p : r.preempted)
      line(fmt::format("  {} preempted on {} by {}", p.victim, p.node, p.preemptor));
    for (const auto& p : r.placed) line(fmt::format("  {} -> {} (freed capacity)", p.instance, p.node));
  }
  for (const auto& d : plan.dependents)
    line(fmt::format("{} {} (not in this set) depends on {}, whose outputs change; it keeps its current render "
                     "until its own spec is applied or submitted again",
                     yellow(g, stdout, "note:"), d.name, d.depends_on));
  text += "\n";
  if (!plan.changed()) {
    line(fmt::format("no changes: the store already matches the set{}",
                     plan.count("keep") ? " (kept apps are listed above)" : ""));
  } else {
    line(fmt::format("{} {} to deploy, {} to update, {} to prune, {} unchanged, {} reused{}{}",
                     bold(g, stdout, "summary:"), plan.count("deploy"), plan.count("update"), plan.count("prune"),
                     plan.count("unchanged"), plan.count("reuse"),
                     plan.count("keep") ? fmt::format(", {} kept", plan.count("keep")) : "",
                     view.dry_run ? " (nothing was written)" : ""));
  }
  return text;
}

json apply_plan_json(const ApplyPlan& plan, const std::string& tenant, const std::string& source,
                     const ApplyView& view) {
  json apps = json::array();
  for (const auto& c : plan.apps) {
    json changes = json::array(), landings = json::array();
    for (const auto& ch : c.changes)
      changes.push_back({{"path", ch.path}, {"op", ch.op}, {"before", ch.before}, {"after", ch.after}, {"secret", ch.secret}});
    for (const auto& l : c.landings)
      landings.push_back({{"instance", l.instance}, {"node", l.node}, {"address", l.address}, {"pending_reason", l.pending_reason}});
    apps.push_back({{"name", c.name},
                    {"version", c.version},
                    {"previous_version", c.previous_version},
                    {"action", c.action},
                    {"owner", c.owner},
                    {"note", c.note},
                    {"changes", changes},
                    {"instances", {{"added", c.added}, {"removed", c.removed}, {"rolling", c.rolling}}},
                    {"landings", landings},
                    {"rerendered_by", c.rerendered_by}});
  }
  json affected = json::array();
  for (const auto& r : plan.affected) {
    json placed = json::array(), preempted = json::array();
    for (const auto& p : r.placed) placed.push_back({{"instance", p.instance}, {"node", p.node}});
    for (const auto& p : r.preempted) preempted.push_back({{"victim", p.victim}, {"node", p.node}, {"preemptor", p.preemptor}});
    if (!placed.empty() || !preempted.empty())
      affected.push_back({{"name", r.name}, {"placed", placed}, {"preempted", preempted}});
  }
  json dependents = json::array();
  for (const auto& d : plan.dependents) dependents.push_back({{"name", d.name}, {"depends_on", d.depends_on}});
  json summary = json::object();
  for (const char* a : {"deploy", "update", "unchanged", "reuse", "prune", "keep"}) summary[a] = plan.count(a);
  return {{"tenant", tenant},   {"source", source},         {"revision", plan.revision},
          {"dry_run", view.dry_run}, {"changed", plan.changed()}, {"summary", summary},
          {"apps", apps},       {"affected", affected},     {"dependents", dependents}};
}

}  // namespace gaia::cli
