#pragma once
// A Backend for tests that records every call and misbehaves on purpose, with a fixed
// seed: copies start late (Starting for a few observations), some fail to start, some
// are lost while running, stops take a few observations to finish, and batch copies exit
// 0 after a while. It checks, on every call, that no stateful instance ever has two
// live copies, and remembers any violation for the test to assert on.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lib/backend.hpp"

namespace gaia::test {

struct FakeBackendOptions {
  uint32_t seed = 1;
  int start_delay = 0;          // Observations a copy stays Starting.
  int stop_delay = 0;           // Observations a stopped copy stays live.
  double fail_start = 0.0;      // Share of starts that fail (exit code 1) instead of running.
  double lose = 0.0;            // Chance per observation that a running copy vanishes.
  int batch_runs_for = 2;       // Observations a batch copy runs before exiting 0.
  bool synchronous = false;
};

class FakeBackend final : public Backend {
 public:
  struct Copy {
    ObservedCopy seen;
    bool stateful = false;
    bool batch = false;
    int age = 0;           // Observations since start.
    int stopping = -1;     // Observations left until a requested stop is done (-1: none).
  };

  explicit FakeBackend(FakeBackendOptions o = {}) : m_options(o), m_rng(o.seed) {}

  std::string_view name() const override { return "fake"; }
  bool synchronous() const override { return m_options.synchronous; }
  bool wait(std::chrono::milliseconds) override { return true; }

  BackendResult<Observation> observe(int64_t now_ms) override {
    ++m_observes;
    for (auto it = m_copies.begin(); it != m_copies.end();) {
      Copy& c = *it;
      ++c.age;
      if (c.stopping >= 0 && c.stopping-- == 0) {
        it = m_copies.erase(it);
        continue;
      }
      if (c.seen.phase == CopyPhase::Starting && c.age > m_options.start_delay) c.seen.phase = CopyPhase::Running;
      if (c.seen.phase == CopyPhase::Running && c.batch && c.age > m_options.batch_runs_for) {
        c.seen.phase = CopyPhase::Exited;
        c.seen.exit_code = 0;
      }
      if (c.seen.phase == CopyPhase::Running && m_options.lose > 0 && chance(m_options.lose)) {
        ++lost;
        it = m_copies.erase(it);
        continue;
      }
      ++it;
    }
    check();
    Observation obs;
    for (const auto& c : m_copies) obs.copies.push_back(c.seen);
    return obs;
  }

  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& specs, int64_t now_ms) override {
    std::vector<ActionResult> out;
    for (const auto& s : specs) {
      starts.push_back(fmt::format("{}@{}#{}", s.instance.key(), s.instance.node, s.instance.generation));
      out.push_back({s.instance.key(), s.instance.node, std::nullopt});
      bool exists = std::any_of(m_copies.begin(), m_copies.end(), [&](const Copy& c) {
        return c.seen.instance == s.instance.key() && c.seen.node == s.instance.node &&
               c.seen.generation == s.instance.generation;
      });
      if (exists) continue;
      Copy c;
      c.seen.instance = s.instance.key();
      c.seen.node = s.instance.node;
      c.seen.generation = s.instance.generation;
      c.seen.started_ms = now_ms;
      c.seen.phase = m_options.start_delay > 0 ? CopyPhase::Starting : CopyPhase::Running;
      c.stateful = s.role.stateful() || !s.instance.volumes.empty();
      c.batch = s.role.kind == "batch";
      if (m_options.fail_start > 0 && chance(m_options.fail_start)) {
        c.seen.phase = CopyPhase::Exited;
        c.seen.exit_code = 1;
        c.seen.reason = "exited with code 1 (fake)";
        ++failed;
      }
      m_copies.push_back(std::move(c));
    }
    check();
    return out;
  }

  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& specs, int64_t) override {
    std::vector<ActionResult> out;
    for (const auto& s : specs) {
      stops.push_back(fmt::format("{}@{}#{}", s.instance, s.node, s.generation));
      out.push_back({s.instance, s.node, std::nullopt});
      for (auto it = m_copies.begin(); it != m_copies.end(); ++it) {
        if (it->seen.instance != s.instance || it->seen.node != s.node || it->seen.generation != s.generation) continue;
        if (!it->seen.live() || m_options.stop_delay == 0) m_copies.erase(it);
        else if (it->stopping < 0) it->stopping = m_options.stop_delay;
        break;
      }
    }
    return out;
  }

  // Live copies of an instance, as the fake holds them.
  int live_copies(const std::string& instance) const {
    return static_cast<int>(std::count_if(m_copies.begin(), m_copies.end(), [&](const Copy& c) {
      return c.seen.instance == instance && c.seen.live();
    }));
  }
  const std::vector<Copy>& copies() const { return m_copies; }
  // Nothing in flight: no copy starting or being stopped.
  bool quiet() const {
    return std::none_of(m_copies.begin(), m_copies.end(), [](const Copy& c) {
      return c.seen.phase == CopyPhase::Starting || c.stopping >= 0;
    });
  }
  void set_options(const FakeBackendOptions& o) { m_options = o; }

  std::vector<std::string> starts, stops;
  std::vector<std::string> violations;  // Stateful instances seen with two live copies.
  int failed = 0, lost = 0, m_observes = 0;

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(m_rng) < p; }

  void check() {
    std::map<std::string, int> live;
    for (const auto& c : m_copies)
      if (c.stateful && c.seen.live() && ++live[c.seen.instance] == 2)
        violations.push_back(fmt::format("{} has two live copies", c.seen.instance));
  }

  FakeBackendOptions m_options;
  std::mt19937 m_rng;
  std::vector<Copy> m_copies;
};

}  // namespace gaia::test
