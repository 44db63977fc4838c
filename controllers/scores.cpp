#include "controllers/scores.hpp"

#include <algorithm>
#include <cmath>

namespace gaia::sched {

std::string_view score_name(ScoreId id, const SchedulerProfile& profile) {
  switch (id) {
    case ScoreId::Allocation: return profile.strategy == "stack" ? "MostAllocated" : "LeastAllocated";
    case ScoreId::Balanced: return "BalancedAllocation";
    case ScoreId::DataLocality: return "DataLocality";
    case ScoreId::CachedImage: return "CachedImage";
    case ScoreId::PreferredAffinity: return "PreferredAffinity";
    case ScoreId::PreferredAntiAffinity: return "PreferredAntiAffinity";
    case ScoreId::EvenSpread: return "EvenSpread";
    case ScoreId::ScarceResources: return "ScarceResources";
  }
  return "?";
}

int score_weight(ScoreId id, const SchedulerProfile& p) {
  switch (id) {
    case ScoreId::Allocation: return p.w_allocation;
    case ScoreId::Balanced: return p.w_balance;
    case ScoreId::DataLocality: return p.w_locality;
    case ScoreId::CachedImage: return p.w_image;
    case ScoreId::PreferredAffinity:
    case ScoreId::PreferredAntiAffinity: return p.w_affinity;
    case ScoreId::EvenSpread: return p.w_spread;
    case ScoreId::ScarceResources: return p.w_scarce;
  }
  return 0;
}

namespace {

// Share of each resource the node would have in use with this instance on it, for the
// resources that matter to it: cpu and memory always, gpu when requested.
int usage_fractions(const NodeIx& n, const Request& rq, std::array<double, 3>& f) {
  const Resources& used = rq.nonprod ? n.alloc_res : n.alloc_req;
  int k = 0;
  auto add = [&](double inv, int64_t u, int64_t want) {
    if (inv <= 0) return;
    f[k++] = std::clamp(static_cast<double>(u + want) * inv, 0.0, 1.0);
  };
  add(n.inv_cpu, used.cpu_millis, rq.req.cpu_millis);
  add(n.inv_mem, used.memory_bytes, rq.req.memory_bytes);
  if (rq.req.gpu > 0) add(n.inv_gpu, used.gpu, rq.req.gpu);
  return k;
}

// 100 / (1 + count) without a division for the counts that occur in practice.
constexpr int kSpreadTable = 64;
constexpr std::array<double, kSpreadTable> make_spread_table() {
  std::array<double, kSpreadTable> t{};
  for (int i = 0; i < kSpreadTable; ++i) t[i] = 100.0 / (1 + i);
  return t;
}
constexpr auto kSpread = make_spread_table();
double spread_value(int count) { return count < kSpreadTable ? kSpread[count] : 100.0 / (1 + count); }

double locality(const GroupCtx& g, const NodeIx& n) {
  // Same node > same switch > same rack > same zone as an instance of the near role.
  static constexpr double kLevel[kTopoCount] = {100, 75, 50, 25};
  for (int t = 0; t < kTopoCount; ++t)
    if (g.near[t]->get(n.dom[t]) > 0) return kLevel[t];
  return 0;
}

double preferred(const GroupCtx& g, const NodeIx& n, bool anti) {
  const auto& node_terms = anti ? g.pref_node_anti : g.pref_node_aff;
  const auto& inst_terms = anti ? g.pref_anti : g.pref_aff;
  int total = anti ? g.pref_anti_weight : g.pref_aff_weight;
  int satisfied = 0;
  for (const AffinityTerm* t : node_terms)
    if (labels_match(t->match, n.node->labels) != anti) satisfied += std::max(t->weight, 1);
  for (const auto& ts : inst_terms) {
    bool near = ts.topo >= 0 && ts.counts->get(n.dom[ts.topo]) > 0;
    if (near != anti) satisfied += std::max(ts.term->weight, 1);
  }
  return total > 0 ? 100.0 * satisfied / total : 0.0;
}

}  // namespace

double score_node(const ClusterIndex& idx, const GroupCtx& g, const SchedulerProfile& profile, int node,
                  ScoreBreakdown* out) {
  // One code path for scheduling and explaining, so explanations show exactly the
  // numbers the decision was made on. Without `out`, plugins with weight 0 are skipped;
  // they would add 0 anyway.
  const NodeIx& n = idx.nodes[node];
  std::array<double, kScoreCount> raw{};
  std::array<bool, kScoreCount> applicable{};
  std::array<int, kScoreCount> weight{};
  for (int i = 0; i < kScoreCount; ++i) weight[i] = score_weight(static_cast<ScoreId>(i), profile);
  bool all = out != nullptr;
  auto wanted = [&](ScoreId id) { return all || weight[static_cast<int>(id)] != 0; };
  auto set = [&](ScoreId id, double value) {
    applicable[static_cast<int>(id)] = true;
    raw[static_cast<int>(id)] = value;
  };

  if (wanted(ScoreId::Allocation) || wanted(ScoreId::Balanced)) {
    std::array<double, 3> f{};
    int k = usage_fractions(n, g.rq, f);
    if (k > 0) {
      double mean = 0;
      for (int i = 0; i < k; ++i) mean += f[i];
      mean /= k;
      set(ScoreId::Allocation, g.stack ? 100.0 * mean : 100.0 * (1.0 - mean));
      if (k == 2) {
        set(ScoreId::Balanced, 100.0 * (1.0 - std::abs(f[0] - f[1]) / 2));
      } else if (k == 3) {
        double var = 0;
        for (int i = 0; i < k; ++i) var += (f[i] - mean) * (f[i] - mean);
        set(ScoreId::Balanced, 100.0 * (1.0 - std::sqrt(var / k)));
      }
    }
  }
  if (g.has_near && wanted(ScoreId::DataLocality)) set(ScoreId::DataLocality, locality(g, n));
  if (!g.rq.role->image.empty() && wanted(ScoreId::CachedImage))
    set(ScoreId::CachedImage, g.image && g.image->get(node) > 0 ? 100.0 : 0.0);
  if (g.pref_aff_weight > 0 && wanted(ScoreId::PreferredAffinity))
    set(ScoreId::PreferredAffinity, preferred(g, n, false));
  if (g.pref_anti_weight > 0 && wanted(ScoreId::PreferredAntiAffinity))
    set(ScoreId::PreferredAntiAffinity, preferred(g, n, true));
  if (wanted(ScoreId::EvenSpread)) {
    double on_node = spread_value(g.spread_node->get(node));
    int rack = n.dom[kTopoRack];
    set(ScoreId::EvenSpread, rack < 0 ? on_node : (on_node + spread_value(g.spread_rack->get(rack))) / 2);
  }
  // GPUs are the resource few nodes have: work that does not ask for one is kept off
  // the nodes that have them, so GPU work finds them free. In a cluster without GPU
  // nodes, or with only GPU nodes, the score would tell no node apart and is left out.
  if (g.rq.req.gpu == 0 && idx.gpu_mixed && wanted(ScoreId::ScarceResources))
    set(ScoreId::ScarceResources, n.inv_gpu > 0 ? 0.0 : 100.0);
  double total = 0;
  for (int i = 0; i < kScoreCount; ++i)
    if (applicable[i]) total += raw[i] * weight[i];
  if (out)
    for (int i = 0; i < kScoreCount; ++i) (*out)[i] = ScoreTerm{static_cast<ScoreId>(i), applicable[i], raw[i], weight[i]};
  return total;
}

}  // namespace gaia::sched
