#pragma once
// Shared pieces of gaia-bench: the case registry, a wall-clock timer, latency summaries
// (mean and nearest-rank percentiles) and the process's peak RSS.
//
// A case is a function returning one JSON object of figures; main.cpp adds "case" and
// "peak_rss_mb" and prints it on one line. To add a case, put a file bench/bench_AREA.cpp
// next to the others (the CMake glob picks it up) with
//
//   namespace { const gaia::bench::Registration r{"area-case", "what it measures", &run}; }
//
// Registration happens during static initialisation, so the registry is a function-local
// static (its construction order is then well defined). This is acceptable here because
// gaia-bench is an executable, not library code.

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lib/error.hpp"

namespace gaia::bench {

using Figures = nlohmann::ordered_json;  // Keys stay in the order a case sets them.

struct Case {
  std::string name;
  std::string description;
  std::function<Figures()> run;  // Throws std::runtime_error when the case cannot run.
};

inline std::vector<Case>& registry() {
  static std::vector<Case> cases;
  return cases;
}

struct Registration {
  Registration(std::string name, std::string description, std::function<Figures()> run) {
    registry().push_back({std::move(name), std::move(description), std::move(run)});
  }
};

class Timer {
 public:
  Timer() : m_start(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start).count();
  }

 private:
  std::chrono::steady_clock::time_point m_start;
};

// Times `fn` once, in milliseconds.
template <typename F>
double time_ms(F&& fn) {
  Timer t;
  fn();
  return t.elapsed_ms();
}

// Nearest-rank percentile (p in (0, 100]) of `samples`, which need not be sorted: the
// smallest sample at or above p percent of them, so p99 of 20 samples is the largest.
inline double percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(samples.size())));
  rank = std::clamp<size_t>(rank, 1, samples.size());
  return samples[rank - 1];
}

inline double mean(const std::vector<double>& samples) {
  if (samples.empty()) return 0.0;
  double sum = 0.0;
  for (double s : samples) sum += s;
  return sum / static_cast<double>(samples.size());
}

// Rounds to 3 decimals so the JSON lines stay readable.
inline double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

// {prefix}mean_ms, {prefix}p50_ms, {prefix}p99_ms of latency samples in milliseconds.
inline void add_latency(Figures& out, const std::vector<double>& samples_ms, const std::string& prefix = "") {
  out[prefix + "mean_ms"] = round3(mean(samples_ms));
  out[prefix + "p50_ms"] = round3(percentile(samples_ms, 50));
  out[prefix + "p99_ms"] = round3(percentile(samples_ms, 99));
}

// Peak resident set size in MiB, of this process (RUSAGE_SELF) or of its waited-for
// children (RUSAGE_CHILDREN: the largest of them, e.g. the render sandboxes). Linux
// reports ru_maxrss in KiB. The figure only grows, so it covers everything the process
// did so far: run one case per process to attribute it to that case.
inline double peak_rss_mb(int who = RUSAGE_SELF) {
  rusage usage{};
  if (getrusage(who, &usage) != 0) return 0.0;
  return round3(static_cast<double>(usage.ru_maxrss) / 1024.0);
}

// CPU time (user + system) used so far by this process and its waited-for children, in
// milliseconds. Under load from other processes wall-clock figures stretch while CPU
// time stays roughly put, so cases report both.
inline double cpu_ms() {
  auto ms = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) * 1e3 + static_cast<double>(tv.tv_usec) / 1e3; };
  double total = 0.0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage usage{};
    if (getrusage(who, &usage) == 0) total += ms(usage.ru_utime) + ms(usage.ru_stime);
  }
  return total;
}

// The value of `r`; throws, naming `what`, when it holds an error instead.
template <class T>
T check(Result<T> r, const char* what) {
  if (!r) throw std::runtime_error(fmt::format("{}: {}", what, format_diagnostics(r.error())));
  return std::move(*r);
}

inline void check(Result<void> r, const char* what) {
  if (!r) throw std::runtime_error(fmt::format("{}: {}", what, format_diagnostics(r.error())));
}

// A fresh directory under the system temp dir, removed with everything in it when the
// object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string templ = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(templ.data())) throw std::runtime_error("cannot create a temporary directory " + templ);
    m_path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return m_path; }

 private:
  std::filesystem::path m_path;
};

// A small deterministic generator (SplitMix64), so a fixed seed gives the same synthetic
// inputs with every standard library.
class Rng {
 public:
  explicit Rng(uint64_t seed) : m_state(seed) {}
  uint64_t next() {
    uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0.
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  uint64_t m_state;
};

}  // namespace gaia::bench
