#include "cli/submission_view.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "cli/table.hpp"
#include "controllers/explain.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

std::string format_blockers(const std::vector<ops::Blocker>& blockers) {
  Table t({"INSTANCE", "STATE", "WHY"});
  for (const auto& b : blockers) t.add_row({b.instance, b.state, b.reason});
  std::string text = t.render();
  // Indent under the heading the caller prints.
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

nlohmann::json blockers_json(const std::vector<ops::Blocker>& blockers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : blockers) out.push_back({{"instance", b.instance}, {"state", b.state}, {"reason", b.reason}});
  return out;
}

namespace {

// The two heaviest score terms of a placement ("LeastAllocated 45.0, DataLocality 40.0"),
// computed by the scheduler's own plugins through explain().
std::map<std::string, std::string> score_terms(const SubmitOutcome& out) {
  std::map<std::string, std::string> terms;
  for (const auto* group : {&out.apps, &out.others})
    for (const auto& app : *group)
      for (const auto& p : app.placed) {
        auto e = explain(out.after.snapshot, p.instance, p.node);
        if (!e || !e->chosen) continue;
        auto scores = e->chosen->scores;
        std::erase_if(scores, [](const ScoreInfo& s) { return !s.applicable || s.weighted <= 0; });
        std::sort(scores.begin(), scores.end(), [](const ScoreInfo& a, const ScoreInfo& b) {
          return a.weighted != b.weighted ? a.weighted > b.weighted : a.plugin < b.plugin;
        });
        std::vector<std::string> parts;
        for (size_t k = 0; k < scores.size() && k < 2; ++k)
          parts.push_back(fmt::format("{} {:.1f}", scores[k].plugin, scores[k].weighted));
        terms[p.instance] = fmt::format("{}", fmt::join(parts, ", "));
      }
  return terms;
}

size_t placements(const SubmitOutcome& out) {
  size_t n = 0;
  for (const auto& a : out.apps) n += a.placed.size();
  for (const auto& a : out.others) n += a.placed.size();
  return n;
}

std::string app_state(const AppReport& r) {
  if (r.ready) return "Ready";
  // The word the app has everywhere else (controllers/app_health.hpp), with the counts
  // it stands for.
  return fmt::format("{} ({}/{} running)", r.status.empty() ? "Progressing" : r.status, r.running, r.instances);
}

nlohmann::json report_json(const AppReport& r, const std::map<std::string, std::string>& terms) {
  nlohmann::json placed = nlohmann::json::array(), pending = nlohmann::json::array(),
                 preempted = nlohmann::json::array();
  for (const auto& p : r.placed) {
    nlohmann::json j = {{"instance", p.instance}, {"node", p.node}, {"address", p.address}, {"score", p.score}};
    if (!p.locality.empty()) j["locality"] = p.locality;
    if (auto it = terms.find(p.instance); it != terms.end()) j["why"] = it->second;
    placed.push_back(std::move(j));
  }
  for (const auto& p : r.pending) pending.push_back({{"instance", p.instance}, {"reason", p.reason}});
  for (const auto& p : r.preempted)
    preempted.push_back({{"victim", p.victim}, {"node", p.node}, {"preemptor", p.preemptor}});
  return {{"tenant", r.tenant},   {"name", r.name},         {"version", r.version},     {"action", r.action},
          {"ready", r.ready},     {"instances", r.instances}, {"running", r.running}, {"placed", placed},
          {"pending", pending},   {"preempted", preempted}, {"removed", r.removed},
          {"rolling", r.rolling}, {"scale_kept", r.scale_kept}};
}

}  // namespace

nlohmann::json outcome_json(const ops::Submission& s, const SubmitOutcome& out, const OutcomeView& view) {
  auto terms = view.explain_scores && placements(out) <= 200 ? score_terms(out) : std::map<std::string, std::string>{};
  nlohmann::json apps = nlohmann::json::array(), others = nlohmann::json::array(), reused = nlohmann::json::array();
  for (const auto& r : out.apps) apps.push_back(report_json(r, terms));
  for (const auto& r : out.others) others.push_back(report_json(r, terms));
  for (const auto& r : s.reused) reused.push_back({{"name", r.name}, {"version", r.version}, {"ready", r.ready}});
  nlohmann::json bindings = nlohmann::json::array();
  for (const auto& n : s.plan.nodes)
    for (const auto& e : n.dependencies)
      bindings.push_back({{"app", n.name},
                          {"alias", e.alias},
                          {"dependency", s.plan.nodes[e.node].app},
                          {"release", s.plan.nodes[e.node].name},
                          {"tenant", s.plan.nodes[e.node].tenant.empty() ? s.tenant : s.plan.nodes[e.node].tenant},
                          {"bound", e.reason}});
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& n : s.plan.nodes)
    for (const auto& k : n.skipped)
      skipped.push_back({{"app", n.name}, {"dependency", k.name}, {"when", k.condition}, {"because", k.value}});
  return {{"tenant", s.tenant},
          {"bindings", bindings},
          {"skipped_dependencies", skipped},
          {"dry_run", view.dry_run},
          {"changed", out.changed()},
          {"apps", apps},
          {"reused", reused},
          {"affected", others},
          {"placed", out.placed},
          {"pending", out.pending},
          {"preempted", out.preempted}};
}

std::string format_outcome(const Globals& g, const ops::Submission& s, const SubmitOutcome& out, const OutcomeView& view) {
  std::string text;
  auto heading = [&](const std::string& h) { text += bold(g, stdout, h) + "\n"; };

  heading(fmt::format("apps (tenant {}):", s.tenant));
  Table apps({"APP", "VERSION", "ACTION", "INSTANCES", "STATUS"});
  for (const auto& r : s.reused)
    apps.add_row({r.name, r.version, "reuse", "-", r.ready ? "Ready (running, reused)" : "Progressing (running, reused)"});
  for (const auto& r : out.apps) {
    std::string action = r.action;
    if (r.action == "update") {
      std::vector<std::string> parts;
      if (!r.rolling.empty()) parts.push_back(fmt::format("{} to roll out", r.rolling.size()));
      if (!r.removed.empty()) parts.push_back(fmt::format("{} removed", r.removed.size()));
      if (!parts.empty()) action += fmt::format(" ({})", fmt::join(parts, ", "));
    }
    apps.add_row({r.name, r.version, action, std::to_string(r.instances), app_state(r)});
  }
  for (const auto& r : out.others)
    apps.add_row({r.name, r.version.empty() ? "-" : r.version, r.action, std::to_string(r.instances), app_state(r)});
  text += apps.render(table_options_for(stdout));
  // Where a dependency binds to a release of another name than its app, or to the one
  // its release: names, which release it is and why.
  std::vector<std::string> bound;
  for (const auto& n : s.plan.nodes)
    for (const auto& e : n.dependencies) {
      const auto& to = s.plan.nodes[e.node];
      if (to.name == to.app && to.tenant.empty() && !e.reason.starts_with("named by") &&
          e.reason.find("was bound to") == std::string::npos)
        continue;
      std::string as = e.alias == spec::default_alias(to.app) ? "" : " as " + e.alias;
      std::string release = to.tenant.empty() ? to.name : fmt::format("{} of tenant {}", to.name, to.tenant);
      bound.push_back(fmt::format("  {} -> {}{}: release {} ({})\n", n.name, to.app, as, release, e.reason));
    }
  if (!bound.empty()) {
    heading("dependencies bound to releases:");
    for (const auto& line : bound) text += line;
  }
  std::vector<std::string> skipped;
  for (const auto& n : s.plan.nodes)
    for (const auto& k : n.skipped)
      skipped.push_back(fmt::format("  {} -> {}: when {}, and {}\n", n.name, k.name, k.condition, k.value));
  if (!skipped.empty()) {
    heading("dependencies left out by their conditions:");
    for (const auto& line : skipped) text += line;
  }

  auto terms = view.explain_scores && placements(out) <= 200 ? score_terms(out) : std::map<std::string, std::string>{};
  Table placed({"INSTANCE", "NODE", "ADDRESS", "SCORE", "WHY"});
  Table pending({"INSTANCE", "WHY"});
  Table preempted({"VICTIM", "NODE", "PREEMPTED BY"});
  for (const auto* group : {&out.apps, &out.others})
    for (const auto& r : *group) {
      for (const auto& p : r.placed) {
        std::string why = terms.count(p.instance) ? terms[p.instance] : "";
        if (!p.locality.empty()) why += (why.empty() ? "" : "; ") + p.locality;
        placed.add_row({p.instance, p.node, p.address.empty() ? "-" : p.address, fmt::format("{:.1f}", p.score),
                        why.empty() ? "-" : why});
      }
      for (const auto& p : r.preempted) preempted.add_row({p.victim, p.node, p.preemptor});
    }
  // Pending: what each reported app has pending at the end (a victim placed elsewhere
  // after its eviction is not pending).
  for (const auto* group : {&out.apps, &out.others})
    for (const auto& r : *group)
      for (const auto& i : out.after.snapshot.instances)
        if (i.tenant == r.tenant && i.app == r.name && i.state == InstanceState::Pending)
          pending.add_row({i.key(), i.pending_reason.empty() ? "not scheduled yet" : i.pending_reason});

  auto indent = [](const std::string& t) {
    std::string o;
    size_t start = 0;
    while (start < t.size()) {
      size_t end = t.find('\n', start);
      if (end == std::string::npos) end = t.size();
      o += "  " + t.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return o;
  };
  if (!placed.empty()) {
    heading(view.dry_run ? "\nwould place:" : "\nplaced:");
    text += indent(placed.render(indented_table_options(stdout, 2)));
  }
  if (!preempted.empty()) {
    heading(view.dry_run ? "\nwould preempt:" : "\npreempted:");
    text += indent(preempted.render(indented_table_options(stdout, 2)));
  }
  if (!pending.empty()) {
    heading(view.dry_run ? "\nwould stay pending:" : "\npending:");
    text += indent(pending.render(indented_table_options(stdout, 2)));
  }
  // An update that keeps a `gaia scale` count over the spec's says so: the user sees
  // which number wins and how to follow the spec instead.
  std::vector<std::string> kept;
  for (const auto& r : out.apps)
    for (const auto& k : r.scale_kept) kept.push_back(fmt::format("{}/{}", r.name, k));
  if (!kept.empty()) {
    heading("\nscale overrides kept:");
    for (const auto& k : kept) text += "  " + k + "\n";
    text += "  (gaia scale APP/ROLE --reset follows the spec's count again)\n";
  }
  text += "\n";
  if (!out.changed()) {
    text += "no changes: every app is already deployed with this spec\n";
  } else {
    text += fmt::format("{} {} placed, {} preempted, {} pending{}\n", bold(g, stdout, "summary:"), out.placed,
                        out.preempted, out.pending, view.dry_run ? " (plan only: nothing was written)" : "");
  }
  return text;
}

void warn_unknown_tenant(const Globals& g, const ClusterState& st, const std::string& tenant) {
  if (st.snapshot.tenants.empty()) return;
  std::vector<std::string> names;
  for (const auto& t : st.snapshot.tenants) {
    if (t.name == tenant) return;
    names.push_back(t.name);
  }
  std::fprintf(stderr, "%s tenant '%s' is not defined in the cluster (tenants: %s); it gets no quota and no node pool\n",
               yellow(g, stderr, "warning:").c_str(), tenant.c_str(), fmt::format("{}", fmt::join(names, ", ")).c_str());
}

}  // namespace gaia::cli
