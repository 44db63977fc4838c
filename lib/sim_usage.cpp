#include "lib/sim_usage.hpp"

#include <algorithm>
#include <cmath>

namespace gaia {

std::vector<std::string> usage_targets(const Instance& i) {
  return {i.key(), i.tenant + "/" + i.app + "/" + i.role, i.tenant + "/" + i.app, "*"};
}

std::optional<Resources> SimUsageModel::usage_of(const Instance& i, int64_t now_ms) const {
  if (rules.empty()) return std::nullopt;
  std::vector<const UsageRule*> matching;
  for (const auto& t : usage_targets(i))
    if (auto it = rules.find(t); it != rules.end()) matching.push_back(&it->second);
  if (matching.empty()) return std::nullopt;
  // A spike anywhere overlays every base value: a spike set on a role hits each of its
  // instances even if one of them has its own base rule.
  auto pick = [&](auto field) {
    for (const UsageRule* r : matching)
      if (r->spike_active(now_ms))
        if (auto v = field(r->spike)) return *v;
    for (const UsageRule* r : matching)
      if (auto v = field(r->base)) return *v;
    return 1.0;
  };
  double cpu = pick([](const UsageFractions& f) { return f.cpu; });
  double memory = pick([](const UsageFractions& f) { return f.memory; });
  Resources u = i.request;
  u.cpu_millis = std::llround(static_cast<double>(i.request.cpu_millis) * cpu);
  u.memory_bytes = std::llround(static_cast<double>(i.request.memory_bytes) * memory);
  // A declared limit caps cpu (the cgroup throttles there), so usage never shows above
  // it. Memory may go above: the run-time controller kills a copy that does, as the
  // kernel would. Without declared limits the fractions apply as given (docs/cli.md).
  if (i.limit) u.cpu_millis = std::min(u.cpu_millis, i.limit->cpu_millis);
  return u;
}

int64_t SimUsageModel::next_change_ms(int64_t now_ms) const {
  int64_t next = 0;
  for (const auto& [target, r] : rules)
    if (r.spike_active(now_ms) && r.spike_until_ms > 0 && (next == 0 || r.spike_until_ms < next))
      next = r.spike_until_ms;
  return next;
}

namespace {

nlohmann::json fractions_json(const UsageFractions& f) {
  auto j = nlohmann::json::object();
  if (f.cpu) j["cpu"] = *f.cpu;
  if (f.memory) j["memory"] = *f.memory;
  return j;
}

UsageFractions fractions_from(const nlohmann::json& j) {
  UsageFractions f;
  if (j.contains("cpu")) f.cpu = j["cpu"].get<double>();
  if (j.contains("memory")) f.memory = j["memory"].get<double>();
  return f;
}

}  // namespace

void to_json(nlohmann::json& j, const SimUsageModel& m) {
  j = nlohmann::json::object();
  for (const auto& [target, r] : m.rules) {
    auto rule = fractions_json(r.base);
    if (!r.spike.empty()) {
      auto spike = fractions_json(r.spike);
      if (r.spike_until_ms) spike["until_ms"] = r.spike_until_ms;
      rule["spike"] = std::move(spike);
    }
    j[target] = std::move(rule);
  }
}

void from_json(const nlohmann::json& j, SimUsageModel& m) {
  m.rules.clear();
  for (const auto& [target, rule] : j.items()) {
    UsageRule r;
    r.base = fractions_from(rule);
    if (rule.contains("spike")) {
      r.spike = fractions_from(rule["spike"]);
      r.spike_until_ms = rule["spike"].value("until_ms", int64_t{0});
    }
    m.rules[target] = r;
  }
}

}  // namespace gaia
