// gaia-bench: in-process benchmarks with fixed seeds and sizes.
//
//   gaia-bench --list          the case names, one per line
//   gaia-bench CASE...         runs the cases in the order given; one JSON object per
//                              case per line on stdout: {"case":..., figures...,
//                              "load_avg_1m":..., "wall_s":..., "peak_rss_mb":...}
//
// Cases register themselves from their own files (see bench/bench_util.hpp). Peak RSS is
// the process's high-water mark so far, so run one case per invocation to attribute it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_util.hpp"

namespace {

void print_usage(std::FILE* to) {
  std::fputs(
      "usage: gaia-bench --list | gaia-bench CASE...\n"
      "Runs the named benchmark cases; prints one JSON object per case per line.\n"
      "Cases:\n",
      to);
  for (const auto& c : gaia::bench::registry()) std::fprintf(to, "  %-20s %s\n", c.name.c_str(), c.description.c_str());
}

const gaia::bench::Case* find_case(std::string_view name) {
  for (const auto& c : gaia::bench::registry())
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // Static initialisation registers cases in link order; list them by name instead.
  std::sort(gaia::bench::registry().begin(), gaia::bench::registry().end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(stderr);
    return 2;
  }
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    print_usage(stdout);
    return 0;
  }
  if (args.size() == 1 && args[0] == "--list") {
    for (const auto& c : gaia::bench::registry()) std::printf("%s\n", c.name.c_str());
    return 0;
  }

  // Check every name before running anything, so a typo does not cost a long run first.
  std::vector<const gaia::bench::Case*> selected;
  bool unknown = false;
  for (const auto& a : args) {
    if (const auto* c = find_case(a)) {
      selected.push_back(c);
    } else {
      std::fprintf(stderr, "gaia-bench: error: unknown case '%s'\n  hint: `gaia-bench --list` shows the cases\n",
                   a.c_str());
      unknown = true;
    }
  }
  if (unknown) return 2;

  int status = 0;
  for (const auto* c : selected) {
    gaia::bench::Figures out;
    out["case"] = c->name;
    // Other work on the machine skews every figure; the load average says how much.
    double load[1] = {0.0};
    out["load_avg_1m"] = ::getloadavg(load, 1) == 1 ? gaia::bench::round3(load[0]) : -1.0;
    gaia::bench::Timer wall;
    try {
      gaia::bench::Figures figures = c->run();
      for (auto it = figures.begin(); it != figures.end(); ++it) out[it.key()] = it.value();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gaia-bench: error: case %s failed: %s\n", c->name.c_str(), e.what());
      status = 1;
      continue;
    }
    out["wall_s"] = gaia::bench::round3(wall.elapsed_ms() / 1000.0);
    out["peak_rss_mb"] = gaia::bench::peak_rss_mb();
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  return status;
}
