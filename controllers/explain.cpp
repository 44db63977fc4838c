#include "controllers/explain.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "controllers/cluster_index.hpp"
#include "controllers/context.hpp"
#include "controllers/filters.hpp"
#include "controllers/preemption.hpp"
#include "controllers/scores.hpp"

namespace gaia {

namespace {

using namespace gaia::sched;

NodeExplanation explain_node(const ClusterIndex& idx, const GroupCtx& g, const SchedulerProfile& profile,
                             const std::string& quota_failure, int node) {
  NodeExplanation ne;
  ne.node = idx.nodes[node].node->name;
  if (!quota_failure.empty()) ne.failures.push_back({std::string(filter_name(Filter::TenantQuota)), quota_failure});
  for (int f = 0; f < kFilterCount; ++f) {
    Filter filter = static_cast<Filter>(f);
    if (filter == Filter::TenantQuota) continue;
    std::string msg;
    if (!check_filter(filter, idx, g, node, &msg)) ne.failures.push_back({std::string(filter_name(filter)), msg});
  }
  ne.feasible = ne.failures.empty();
  if (!ne.feasible) return ne;
  ScoreBreakdown terms;
  ne.total = score_node(idx, g, profile, node, &terms);
  for (const auto& t : terms)
    ne.scores.push_back({std::string(score_name(t.id, profile)), t.applicable, t.raw, t.weight, t.weighted()});
  return ne;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// Left-aligned columns separated by two spaces; the last column is not padded.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) line += c + 1 == r.size() ? r[c] : pad(r[c], width[c]) + "  ";
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string term_cell(const ScoreInfo& s) {
  if (!s.applicable) return "-";
  return fmt::format("{:.1f}x{}", s.raw, s.weight);
}

std::string failures_cell(const NodeExplanation& n) {
  std::string out;
  for (const auto& f : n.failures) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", f.filter, f.message);
  return out;
}

}  // namespace

Result<Explanation> explain(const Snapshot& snapshot, const std::string& key, const std::optional<std::string>& node) {
  ClusterIndex idx(snapshot);
  int inst = idx.instance_index(key);
  if (inst < 0)
    return fail(Diagnostic{{}, "instance", fmt::format("unknown instance '{}'", key),
                           "instance keys look like <ordinal>.<role>.<app>.<tenant>, e.g. 0.web.shop.t1"});
  int only = -1;
  if (node) {
    only = idx.node_index(*node);
    if (only < 0)
      return fail(Diagnostic{{}, "node", fmt::format("unknown node '{}'", *node), "list nodes with `gaia nodes`"});
  }
  Explanation e;
  e.instance = key;
  int current = idx.insts[inst].node;
  if (current >= 0) {
    e.placed = true;
    e.node = idx.nodes[current].node->name;
    idx.evict(inst);  // Judge it as the scheduler did: without itself on the node.
  }
  CounterPool pool(idx);
  GroupCtx g;
  init_group(g, idx, pool, snapshot.profile, inst);
  const SchedulerProfile& profile = snapshot.profile;

  std::string quota_failure;
  check_quota(idx, g.rq, &quota_failure);
  if (!quota_failure.empty()) {
    e.failing.push_back({std::string(filter_name(Filter::TenantQuota)), "", static_cast<int>(idx.nodes.size())});
    e.fitting = 0;
  } else {
    for (const auto& c : count_failures(idx, g, nullptr, &e.fitting))
      e.failing.push_back({std::string(filter_name(c.filter)), c.detail, c.nodes});
  }

  std::vector<NodeExplanation> all;
  for (size_t n = 0; n < idx.nodes.size(); ++n) all.push_back(explain_node(idx, g, profile, quota_failure, static_cast<int>(n)));
  std::vector<size_t> order(all.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (all[a].feasible != all[b].feasible) return all[a].feasible;
    if (all[a].feasible && all[a].total != all[b].total) return all[a].total > all[b].total;
    return all[a].node < all[b].node;
  });

  if (e.placed) {
    e.chosen = all[static_cast<size_t>(current)];
    for (size_t i : order)
      if (all[i].feasible && static_cast<int>(i) != current) {
        e.runner_up = all[i];
        break;
      }
    e.summary = fmt::format("placed on {}", e.node);
    if (e.chosen->feasible) e.summary += fmt::format(" (score {:.1f})", e.chosen->total);
    else e.summary += " (it would not fit there now)";
    if (e.runner_up) e.summary += fmt::format("; runner-up {} (score {:.1f})", e.runner_up->node, e.runner_up->total);
    else e.summary += "; no other node fits";
  } else if (!quota_failure.empty()) {
    e.summary = quota_failure;
  } else {
    std::vector<FailureCount> counts;
    for (const auto& c : e.failing)
      for (int f = 0; f < kFilterCount; ++f)
        if (filter_name(static_cast<Filter>(f)) == c.filter) counts.push_back({static_cast<Filter>(f), c.detail, c.nodes});
    e.summary = summarize_failures(static_cast<int>(idx.nodes.size()), e.fitting, counts);
    if (e.fitting == 0) {
      std::vector<int> candidates;
      for (size_t n = 0; n < idx.nodes.size(); ++n)
        if (first_static_failure(idx, g, static_cast<int>(n)) < 0 &&
            (!g.rq.sticky || static_cast<int>(n) == g.rq.sticky_node))
          candidates.push_back(static_cast<int>(n));
      VictimPlan plan = find_preemption(idx, g, candidates);
      if (plan.node >= 0) {
        for (int v : plan.victims)
          e.preemptions.push_back({idx.insts[v].inst->key(), idx.nodes[plan.node].node->name, key});
        e.summary += fmt::format("; would preempt {} instance{} on {}", plan.victims.size(),
                                 plan.victims.size() == 1 ? "" : "s", idx.nodes[plan.node].node->name);
      } else {
        e.summary += "; preemption: no node where evicting lower-priority instances makes room";
      }
    }
  }
  for (size_t i : order)
    if (only < 0 || static_cast<int>(i) == only) e.nodes.push_back(std::move(all[i]));
  return e;
}

std::string format_explanation(const Explanation& e) {
  std::string out = fmt::format("Instance {}: {}\n", e.instance, e.placed ? "placed on " + e.node : "pending");
  out += fmt::format("  {}\n", e.summary);
  if (!e.preemptions.empty()) {
    out += fmt::format("  Would evict on {}:\n", e.preemptions.front().node);
    for (const auto& p : e.preemptions) out += fmt::format("    {}\n", p.victim);
  }
  if (e.placed && e.chosen) {
    out += "\n";
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"PLUGIN", e.chosen->node + " (chosen)"});
    if (e.runner_up) rows.back().push_back(e.runner_up->node + " (runner-up)");
    for (size_t s = 0; s < e.chosen->scores.size(); ++s) {
      const ScoreInfo& c = e.chosen->scores[s];
      std::vector<std::string> row{c.plugin, term_cell(c)};
      if (e.runner_up) row.push_back(term_cell(e.runner_up->scores[s]));
      if (c.applicable || (e.runner_up && e.runner_up->scores[s].applicable)) rows.push_back(std::move(row));
    }
    std::vector<std::string> total{"TOTAL", e.chosen->feasible ? fmt::format("{:.1f}", e.chosen->total) : failures_cell(*e.chosen)};
    if (e.runner_up) total.push_back(fmt::format("{:.1f}", e.runner_up->total));
    rows.push_back(std::move(total));
    out += table(rows);
  }
  if (e.nodes.empty()) return out;
  // Score columns: the plugins that apply on at least one feasible node.
  std::vector<size_t> cols;
  std::vector<std::string> names;
  for (const auto& n : e.nodes)
    for (size_t s = 0; s < n.scores.size(); ++s)
      if (n.scores[s].applicable && std::find(cols.begin(), cols.end(), s) == cols.end()) {
        cols.push_back(s);
        names.push_back(n.scores[s].plugin);
      }
  std::vector<size_t> sorted = cols;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"NODE", "FIT", "TOTAL"};
  for (size_t s : sorted)
    for (const auto& n : e.nodes)
      if (s < n.scores.size()) {
        header.push_back(n.scores[s].plugin);
        break;
      }
  header.push_back("REASONS");
  rows.push_back(header);
  for (const auto& n : e.nodes) {
    std::vector<std::string> row{n.node, n.feasible ? "yes" : "no", n.feasible ? fmt::format("{:.1f}", n.total) : "-"};
    for (size_t s : sorted) row.push_back(n.feasible ? term_cell(n.scores[s]) : "-");
    row.push_back(failures_cell(n));
    rows.push_back(std::move(row));
  }
  out += "\n" + table(rows);
  return out;
}

}  // namespace gaia
