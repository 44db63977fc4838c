#pragma once
// The sim backend's usage model (docs/decisions.md): what each instance uses, as a
// fraction of its request, with spikes that last until a given time. It is kept in the
// store (key sim/usage) and read with the rest of the cluster state, so everything the
// run-time controllers decide (observed usage, reclamation, runtime preemption) is a
// function of the stored state and the time, and a test sets usage by writing a model
// rather than by mocking a backend.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/cluster.hpp"

namespace gaia {

// Usage as fractions of the request (0.4 = 40%, 1.5 = 150%). An unset field falls
// through to a less specific rule.
struct UsageFractions {
  std::optional<double> cpu, memory;
  bool empty() const { return !cpu && !memory; }
  bool operator==(const UsageFractions&) const = default;
};

struct UsageRule {
  UsageFractions base;
  // While the spike lasts its fractions replace the base ones (of every rule).
  UsageFractions spike;
  int64_t spike_until_ms = 0;  // 0 with a spike set: until the spike is cleared.

  bool spike_active(int64_t now_ms) const { return !spike.empty() && (spike_until_ms == 0 || now_ms < spike_until_ms); }
  bool operator==(const UsageRule&) const = default;
};

struct SimUsageModel {
  // Target -> rule. A target is "*" (every instance), "<tenant>/<app>",
  // "<tenant>/<app>/<role>", or an instance key "<ordinal>.<role>.<app>.<tenant>"; the
  // most specific one that sets a field wins.
  std::map<std::string, UsageRule> rules;

  bool empty() const { return rules.empty(); }
  // What `i` uses at `now_ms`, or nullopt when no rule matches it (usage not observed).
  // cpu and memory each come from the most specific active spike, else the most
  // specific base fraction, else 1.0 (the request). gpu and disk are not modelled and
  // are taken as requested.
  std::optional<Resources> usage_of(const Instance& i, int64_t now_ms) const;
  // The earliest end of a spike after `now_ms` (0: none): when observed usage changes
  // next without anyone touching the model.
  int64_t next_change_ms(int64_t now_ms) const;
  bool operator==(const SimUsageModel&) const = default;
};

// The targets that apply to `i`, most specific first.
std::vector<std::string> usage_targets(const Instance& i);

void to_json(nlohmann::json& j, const SimUsageModel& m);
void from_json(const nlohmann::json& j, SimUsageModel& m);

}  // namespace gaia
