#include <catch2/catch.hpp>

#include <chrono>

#include "controllers/scheduler.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

// Hidden by default ("[.]"): run with `test_controllers "[perf]"`. A smoke check of
// the scale targets; the real numbers come from gaia-bench.
namespace {

void run_scale(int nodes, int apps, int replicas = 10, int pct = 100) {
  ClusterBuilder b;
  b.s.profile.percentage_of_nodes_to_score = pct;
  const int roles_per_app = 5;
  for (int i = 0; i < nodes; ++i)
    b.node(fmt::format("n{:05}", i), 64000, 256,
           {{"zone", fmt::format("z{}", i % 3)}, {"rack", fmt::format("r{}", i / 40)},
            {"disk", i % 4 == 0 ? "ssd" : "hdd"}});
  for (int a = 0; a < apps; ++a)
    for (int r = 0; r < roles_per_app; ++r) {
      std::string app = fmt::format("app{}", a), name = fmt::format("role{}", r);
      Role& role = b.role(fmt::format("t{}", a % 10), app, name, res(500 + 250 * (r % 4), 1 + r % 4),
                          Priority{r == 4 ? Band::Nonprod : Band::Prod, 100 + a % 7});
      if (r == 0) {
        AffinityTerm anti;
        anti.target = AffinityTerm::Target::Instance;
        anti.match = {{"gaia.io/role", "In", {name}}, {"gaia.io/app", "In", {app}}};
        role.required_anti_affinity = {anti};
      }
      if (r == 1) role.near = app + "/role0";
      if (r == 2) role.node_selector = {{"disk", "ssd"}};
      if (r == 3) role.ports = {Port{"http", 0, "TCP"}};
      for (int i = 0; i < replicas; ++i) b.instance(fmt::format("t{}", a % 10), app, name, i);
    }
  auto keys = b.pending();
  auto start = std::chrono::steady_clock::now();
  Decision d = schedule(b.s, keys);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(fmt::format("{} placements, {} unschedulable in {:.2f}s: {:.0f} placements/s", d.placements.size(),
                   d.unschedulable.size(), secs, d.placements.size() / secs));
  CHECK(d.placements.size() == keys.size());
  CHECK(secs < 30);
}

}  // namespace

TEST_CASE("scheduling 50,000 instances on 5,000 nodes is fast", "[.][perf]") { run_scale(5000, 1000); }
TEST_CASE("scheduling 100,000 instances on 10,000 nodes is fast", "[.][perf]") { run_scale(10000, 2000); }
TEST_CASE("singleton runs: 20,000 roles of one instance on 5,000 nodes", "[.][perf]") { run_scale(5000, 4000, 1); }
TEST_CASE("singleton runs with 10% sampling", "[.][perf]") { run_scale(5000, 4000, 1, 10); }
