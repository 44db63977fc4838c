#include "cli/propagation_view.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cli/controller_loop.hpp"
#include "cli/submission_view.hpp"
#include "cli/table.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

namespace {

using json = nlohmann::json;

}  // namespace

std::string controller_summary(const Batch& b) {
  std::vector<std::pair<std::string, size_t>> counts;
  for (const auto& e : b.events) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == e.reason; });
    if (it == counts.end()) counts.emplace_back(e.reason, 1);
    else ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counts) parts.push_back(fmt::format("{} {}", n, reason));
  return fmt::format("{}", fmt::join(parts, ", "));
}

int wait_for_change(const Globals& g, Session& s, const ops::ChangeOutcome& o, const std::string& timeout, bool print) {
  if (o.dry_run) return k_ok;
  auto d = parse_duration(timeout);
  if (!d) return report(g, d.error());
  FollowOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  options.print = print;
  Result<ops::ChangeWait> w = ops::ChangeWait{};
  {
    // The status line is cleared before anything else is printed.
    FollowProgress progress(g, options);
    w = ops::wait_for_change(s.workspace(), o, progress.options());
  }
  if (!w) return report(g, w.error());
  if (w->done) return k_ok;
  std::fprintf(stderr, "%s %zu instance(s) not rolled out after %s:\n", red(g, stderr, "error:").c_str(),
               w->blockers.size(), timeout.c_str());
  std::fputs(format_blockers(w->blockers).c_str(), stderr);
  std::fprintf(stderr, "  hint: `gaia explain INSTANCE` shows why one is pending; the rollout goes on with the next gaia "
                       "command or under `gaia controller run`\n");
  return k_error;
}

std::string format_propagation(const Globals& g, const ops::ChangeOutcome& o) {
  std::string text;
  auto heading = [&](const std::string& h) { text += bold(g, stdout, h) + "\n"; };
  auto indent = [](const std::string& t) {
    std::string r;
    size_t start = 0;
    while (start < t.size()) {
      size_t end = t.find('\n', start);
      if (end == std::string::npos) end = t.size();
      r += "  " + t.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return r;
  };
  const auto& apps = o.propagation.apps;
  Table direct({"APP", "TENANT", "READ", "WAS", "NOW", "EFFECT"});
  Table dependents({"APP", "TENANT", "VIA", "EFFECT"});
  auto effect = [&](const ops::PropagatedApp& a) -> std::string {
    if (!a.rerendered) return "kept (imported outputs unchanged)";
    std::string e = !a.roles_changed   ? "re-render, roles unchanged: instances kept"
                    : a.to_roll > 0     ? fmt::format("re-render, roll out {} instance(s)", a.to_roll)
                                        : "re-render";
    if (a.outputs_changed) e += "; outputs change";
    if (!a.deps_added.empty()) e += fmt::format("; now depends on {}", fmt::join(a.deps_added, ", "));
    if (!a.deps_removed.empty())
      e += fmt::format("; no longer depends on {} (it keeps running)", fmt::join(a.deps_removed, ", "));
    return e;
  };
  // Secret values are masked (lib/secrets.hpp): the impact chain is no place to show them.
  const SecretKeys& secrets = o.propagation.secrets;
  for (const auto& a : apps) {
    if (a.direct) {
      for (size_t k = 0; k < a.reads.size(); ++k) {
        const auto& c = a.reads[k];
        direct.add_row({k == 0 ? a.name : "", k == 0 ? a.tenant : "", c.read.kind + " " + c.read.key,
                        secrets.read_text(c.read.kind, c.read.key, c.read.value) + (c.read.defaulted ? " (default)" : ""),
                        c.now ? secrets.read_text(c.read.kind, c.read.key, c.now->value) : "(default)",
                        k == 0 ? effect(a) : ""});
      }
    } else {
      dependents.add_row({a.name, a.tenant,
                          a.imports.empty() ? "-" : fmt::format("{}", fmt::join(a.imports, ", ")), effect(a)});
    }
  }
  if (direct.empty()) {
    text += "no deployed app reads a value this changes\n";
  } else {
    heading(o.dry_run ? "would re-render (apps reading it):" : "re-rendered (apps reading it):");
    text += indent(direct.render(indented_table_options(stdout, 2)));
  }
  if (!dependents.empty()) {
    heading(o.dry_run ? "dependents (re-rendered only if an output they import changes):" : "dependents:");
    text += indent(dependents.render(indented_table_options(stdout, 2)));
  }
  if (!o.placement.empty() || !o.moved.empty()) {
    Table moves({"INSTANCE", "NODE", "WHY"});
    for (const auto& v : o.placement)
      if (o.dry_run || v.pinned) moves.add_row({v.instance, v.node, v.pinned ? v.reason + " (stays: its volume is there)" : v.reason});
    if (!moves.empty()) {
      heading(o.dry_run ? "required placement no longer met (would move):" : "required placement no longer met, kept:");
      text += indent(moves.render(indented_table_options(stdout, 2)));
    }
    if (!o.moved.empty())
      text += fmt::format("moved {} instance(s) off nodes that no longer fit: {}\n", o.moved.size(), fmt::join(o.moved, ", "));
  }
  for (const auto& a : apps)
    for (const auto& w : a.scale_wins) text += fmt::format("{} {}\n", yellow(g, stdout, "note:"), w);
  for (const auto& id : o.committed.skipped)
    text += fmt::format("{} {} changed while this ran (resubmitted?); it was left as it is\n",
                        yellow(g, stdout, "note:"), id);
  if (o.controllers)
    if (std::string summary = controller_summary(o.controllers->outcome.batch); !summary.empty())
      text += fmt::format("{} {}\n", bold(g, stdout, "controllers:"), summary);
  return text;
}

nlohmann::json propagation_json(const ops::ChangeOutcome& o) {
  json apps = json::array();
  for (const auto& a : o.propagation.apps) {
    json reads = json::array();
    for (const auto& c : a.reads) {
      const SecretKeys& secrets = o.propagation.secrets;
      reads.push_back({{"kind", c.read.kind},
                       {"key", c.read.key},
                       {"was", secrets.mask_read(c.read.kind, c.read.key, c.read.value)},
                       {"was_default", c.read.defaulted},
                       {"now", !c.now ? json() : secrets.mask_read(c.read.kind, c.read.key, c.now->value)},
                       {"now_default", !c.now.has_value()}});
    }
    apps.push_back({{"tenant", a.tenant},
                    {"app", a.name},
                    {"direct", a.direct},
                    {"reads", reads},
                    {"imports_changed", a.imports},
                    {"rerendered", a.rerendered},
                    {"outputs_changed", a.outputs_changed},
                    {"roles_changed", a.roles_changed},
                    {"to_roll", a.to_roll},
                    {"scale_wins", a.scale_wins},
                    {"dependencies_added", a.deps_added},
                    {"dependencies_removed", a.deps_removed},
                    {"old_hash", a.old_hash},
                    {"new_hash", a.new_hash}});
  }
  json placement = json::array();
  for (const auto& v : o.placement)
    placement.push_back({{"instance", v.instance}, {"node", v.node}, {"reason", v.reason}, {"pinned", v.pinned}});
  json out = {{"dry_run", o.dry_run}, {"apps", apps}, {"placement", placement}, {"moved", o.moved},
              {"skipped", o.committed.skipped}};
  if (o.controllers) out["controllers"] = controller_summary(o.controllers->outcome.batch);
  return out;
}

}  // namespace gaia::cli
