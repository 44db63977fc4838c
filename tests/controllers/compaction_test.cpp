// Cell compaction (controllers/compaction.hpp): the generator is deterministic per seed
// and fills the cell as asked, and on small cells whose answer is known by hand the
// search finds exactly the smallest cell, and segregation, bucketing and reclamation
// move it the way the Borg paper reports.
#include <catch2/catch.hpp>

#include "controllers/compaction.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::sim;
using gaia::test::kGi;

namespace {

// `machines` identical machines of `cores` thousandths of a core and 64 GiB.
SimWorkload cell(int machines, int64_t cpu_millis) {
  SimWorkload w;
  for (int i = 0; i < machines; ++i) {
    Node n;
    n.name = fmt::format("m{}", i);
    n.address = fmt::format("10.0.0.{}", i + 1);
    n.capacity = Resources{cpu_millis, 64 * kGi, 0, 0};
    w.machines.push_back(n);
  }
  return w;
}

// A job of `count` identical instances, through the generator's own add_job.
void add_job(SimWorkload& w, const std::string& app, int count, int64_t cpu_millis, Band band, double usage = 1.0) {
  Role r;
  r.resources = Resources{cpu_millis, 1 * kGi, 0, 0};
  r.priority.band = band;
  r.replicas = count;
  sim::add_job(w, app, r, usage);
}

CompactionPolicy policy(const std::string& name) {
  for (const auto& p : standard_policies())
    if (p.name == name) return p;
  FAIL("no policy " << name);
  return {};
}

std::vector<int> sizes(const CompactionResult& r) {
  std::vector<int> out;
  for (const auto& run : r.runs) out.push_back(run.machines);
  return out;
}

}  // namespace

TEST_CASE("compaction: the generated workload is fixed by its seed and fills the cell as asked", "[compaction]") {
  TraceShape shape;
  shape.machines = 200;
  shape.seed = 7;
  SimWorkload a = generate_workload(shape), b = generate_workload(shape);
  REQUIRE(a.instances.size() == b.instances.size());
  for (size_t i = 0; i < a.instances.size(); ++i) CHECK(a.instances[i].request == b.instances[i].request);
  shape.seed = 8;
  SimWorkload c = generate_workload(shape);
  CHECK(c.instances.size() != a.instances.size());

  int64_t cell_cpu = 0, requested = 0;
  int gpu_machines = 0, prod = 0, gpu_instances = 0;
  for (const auto& m : a.machines) {
    cell_cpu += m.capacity.cpu_millis;
    gpu_machines += m.capacity.gpu > 0;
  }
  for (const auto& i : a.instances) {
    requested += i.request.cpu_millis;
    prod += i.priority.band == Band::Prod;
    gpu_instances += i.request.gpu > 0;
  }
  CHECK(a.machines.size() == 200);
  CHECK(gpu_machines == 10);
  CHECK(requested >= static_cast<int64_t>(0.7 * cell_cpu));
  CHECK(requested < static_cast<int64_t>(0.75 * cell_cpu));
  // Both kinds of work, and a few GPU instances.
  CHECK(prod > 0);
  CHECK(prod < static_cast<int>(a.instances.size()));
  CHECK(gpu_instances > 0);
}

TEST_CASE("compaction: the smallest cell that fits is found for every removal order", "[compaction]") {
  // 2-core instances on 4-core machines: two per machine.
  SimWorkload w = cell(6, 4000);
  add_job(w, "a", 6, 2000, Band::Prod);
  CompactionOptions o;
  o.seeds = 3;
  o.pending_allowed = 0;
  CompactionResult r = compact(w, policy("gaia"), o);
  CHECK(sizes(r) == std::vector<int>{3, 3, 3});
  CHECK(r.runs[0].pending == 0);
  CHECK(machines_percentile(r, 50) == 3);
  // Two of six may stay pending: four instances, two machines.
  o.pending_allowed = 0.34;
  CHECK(sizes(compact(w, policy("best-fit"), o)) == std::vector<int>{2, 2, 2});
}

TEST_CASE("compaction: a cell too small grows with copies of its machines, and one that cannot hold the work says so",
          "[compaction]") {
  SimWorkload small = cell(2, 4000);
  add_job(small, "a", 6, 2000, Band::Prod);
  CHECK(sizes(compact(small, policy("gaia"), CompactionOptions{2, 1, 0})) == std::vector<int>{3, 3});

  SimWorkload w = cell(2, 1000);
  add_job(w, "big", 1, 2000, Band::Prod);
  CompactionResult r = compact(w, policy("gaia"), CompactionOptions{1, 1, 0});
  REQUIRE(r.runs.size() == 1);
  CHECK_FALSE(r.runs[0].fits_at_all);
  CHECK(r.runs[0].machines == 6);  // Three times the cell, grown with copies, did not hold it either.
  CHECK(r.runs[0].pending == 1);
}

TEST_CASE("compaction: segregation and bucketing need more machines, reclamation fewer", "[compaction]") {
  CompactionOptions o{2, 1, 0};
  SECTION("segregated prod and non-prod cannot share a machine") {
    SimWorkload w = cell(4, 4000);
    add_job(w, "prod", 3, 2000, Band::Prod);
    add_job(w, "batch", 1, 2000, Band::Nonprod);
    CHECK(sizes(compact(w, policy("gaia"), o)) == std::vector<int>{2, 2});
    CHECK(sizes(compact(w, policy("gaia-segregated"), o)) == std::vector<int>{3, 3});
  }
  SECTION("requests rounded up to powers of two strand the rest of a machine") {
    // 1.2 cores: three on a 4.096-core machine; rounded to 2.048, two.
    SimWorkload w = cell(4, 4096);
    add_job(w, "a", 6, 1200, Band::Prod);
    CHECK(sizes(compact(w, policy("gaia"), o)) == std::vector<int>{2, 2});
    CHECK(sizes(compact(w, policy("gaia-bucketed"), o)) == std::vector<int>{3, 3});
  }
  SECTION("non-prod work fills what prod asked for and does not use") {
    SimWorkload w = cell(4, 4000);
    add_job(w, "prod", 2, 3000, Band::Prod, 0.2);
    add_job(w, "batch", 2, 3000, Band::Nonprod);
    CHECK(sizes(compact(w, policy("gaia"), o)) == std::vector<int>{4, 4});
    CHECK(sizes(compact(w, policy("gaia-reclaim"), o)) == std::vector<int>{2, 2});
  }
}
