// The scheduler's shortcuts must not change a decision: the bounded search over nodes
// in order of use (controllers/node_order.hpp), the written-out score of plain runs
// (score_simple) and the per-priority sums preemption rules nodes out with.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <set>

#include "controllers/cluster_index.hpp"
#include "controllers/context.hpp"
#include "controllers/node_order.hpp"
#include "controllers/scheduler.hpp"
#include "controllers/scores.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

// Few node shapes, so that classes have many members and many nodes tie; a few GPU
// nodes and now and then a node without memory (which the order leaves out).
void build_shaped_cluster(ClusterBuilder& b) {
  int nodes = *rc::gen::inRange(1, 40);
  for (int i = 0; i < nodes; ++i) {
    int shape = *rc::gen::inRange(0, 4);
    int64_t cpu = shape == 0 ? 4000 : shape == 1 ? 8000 : 16000;
    int64_t mem = shape == 0 ? 16 : shape == 1 ? 32 : 64;
    Node& n = b.node(fmt::format("n{:02d}", i), cpu, mem,
                     {{"disk", *rc::gen::element<std::string>("hdd", "ssd")}, {"rack", fmt::format("r{}", i % 5)}});
    if (shape == 3) n.capacity.gpu = 2;
    if (*rc::gen::inRange(0, 3) == 0) n.cached_images = {"img/a:1"};
    if (*rc::gen::inRange(0, 25) == 0) n.capacity.memory_bytes = 0;
    if (*rc::gen::inRange(0, 10) == 0) n.state = NodeState::Cordoned;
  }
  b.s.tenants.push_back(Tenant{"t1", {}, {}});
  SchedulerProfile& p = b.s.profile;
  p.strategy = *rc::gen::element<std::string>("spread", "stack");
  p.w_allocation = *rc::gen::inRange(0, 4);
  p.w_balance = *rc::gen::inRange(0, 4);
  p.w_spread = *rc::gen::inRange(0, 3);
  p.w_scarce = *rc::gen::inRange(0, 3);
  p.w_image = *rc::gen::inRange(0, 3);
}

// Roles of plain instances (the bounded search's case) with now and then one it does
// not take: a GPU request, a selector, anti-affinity, a near role.
void add_plain_roles(ClusterBuilder& b, const std::string& app, int running_on) {
  int roles = *rc::gen::inRange(1, 8);
  for (int r = 0; r < roles; ++r) {
    Priority p{*rc::gen::element(Band::Nonprod, Band::Prod), *rc::gen::inRange(0, 3) * 100};
    std::string name = fmt::format("r{}", r);
    // Quarter cores and whole GiB: equal requests on equal nodes give equal scores.
    Role& role = b.role("t1", app, name, res(*rc::gen::inRange(1, 24) * 250, *rc::gen::inRange(1, 12)), p);
    // Most roles name an image, as real apps do; only some nodes cache it.
    if (*rc::gen::inRange(0, 3) != 0) role.image = *rc::gen::element<std::string>("img/a:1", "img/b:1");
    int extra = *rc::gen::inRange(0, 12);
    if (extra == 0) role.resources.gpu = 1;
    if (extra == 1) role.node_selector = {{"disk", "ssd"}};
    if (extra == 2) {
      AffinityTerm anti;
      anti.target = AffinityTerm::Target::Instance;
      anti.match = {{"gaia.io/role", "In", {name}}, {"gaia.io/app", "In", {app}}};
      anti.topology = "node";
      role.required_anti_affinity = {anti};
    }
    if (extra == 3) role.near = app + "/r0";
    int replicas = *rc::gen::inRange(1, 7);
    for (int i = 0; i < replicas; ++i) {
      std::string node;
      if (running_on > 0 && *rc::gen::inRange(0, 3) == 0)
        node = b.s.nodes[static_cast<size_t>(*rc::gen::inRange(0, running_on))].name;
      Instance& in = b.instance("t1", app, name, i, node);
      // Some running work holds less than it asked for (reclaimed): non-prod fits
      // against reservations, the other basis of the order.
      if (!node.empty() && *rc::gen::arbitrary<bool>()) in.reservation = Resources{in.request.cpu_millis / 2, in.request.memory_bytes / 2, 0, 0};
    }
  }
}

std::string exact_text(const Decision& d) {
  std::string out;
  for (const auto& p : d.placements) out += fmt::format("place {} {} {}\n", p.instance, p.node, p.score);
  for (const auto& p : d.preemptions) out += fmt::format("evict {} {} {}\n", p.victim, p.node, p.preemptor);
  for (const auto& u : d.unschedulable) out += fmt::format("pending {} {}\n", u.instance, u.reason);
  return out;
}

}  // namespace

TEST_CASE("property: the bounded search and kept victim plans decide exactly as searching every node", "[scheduler][node_order]") {
  bool ok = rc::check("same decision, same scores, same victims", [] {
    ClusterBuilder b;
    build_shaped_cluster(b);
    add_plain_roles(b, "old", static_cast<int>(b.s.nodes.size()));
    add_plain_roles(b, "new", 0);
    auto keys = b.pending();
    // Every shortcut on, each one off, and both off: one decision.
    std::string all = exact_text(schedule(b.s, keys, ScheduleTuning{}));
    RC_ASSERT(all == exact_text(schedule(b.s, keys, ScheduleTuning{.bounded_search = false})));
    RC_ASSERT(all == exact_text(schedule(b.s, keys, ScheduleTuning{.keep_victim_plans = false})));
    RC_ASSERT(all == exact_text(schedule(b.s, keys, ScheduleTuning{.bounded_search = false, .keep_victim_plans = false})));
  });
  REQUIRE(ok);
}

TEST_CASE("bounded search: ties between equal nodes go to the first name, as before", "[scheduler][node_order]") {
  ClusterBuilder b;
  for (int i = 9; i >= 0; --i) b.node(fmt::format("n{}", i), 8000, 32);
  b.role("t1", "a", "web", res(1000, 2));
  b.instance("t1", "a", "web", 0);
  for (const bool bounded : {true, false}) {
    Decision d = schedule(b.s, b.pending(), ScheduleTuning{bounded});
    REQUIRE(d.placements.size() == 1);
    CHECK(d.placements[0].node == "n0");
  }
  // Best fit: n6, the smallest, is the fullest after placing. (With the balance score
  // on, n6's uneven cpu and memory would cost it more than it gains.)
  b.s.profile.strategy = "stack";
  b.s.profile.w_balance = 0;
  b.s.nodes[3].capacity.cpu_millis = 4000;
  for (const bool bounded : {true, false}) {
    Decision d = schedule(b.s, b.pending(), ScheduleTuning{bounded});
    REQUIRE(d.placements.size() == 1);
    CHECK(d.placements[0].node == "n6");
  }
}

TEST_CASE("property: score_simple equals the general score bit for bit, and score_bound bounds it",
          "[scheduler][node_order]") {
  bool ok = rc::check("written-out score and bound", [] {
    ClusterBuilder b;
    build_shaped_cluster(b);
    add_plain_roles(b, "old", static_cast<int>(b.s.nodes.size()));
    add_plain_roles(b, "new", 0);
    sched::ClusterIndex idx(b.s);
    sched::CounterPool pool(idx);
    sched::NodeOrder order(idx);
    sched::ScoreWeights w = sched::score_weights(b.s.profile);
    for (size_t i = 0; i < idx.insts.size(); ++i) {
      if (idx.insts[i].node >= 0) continue;
      sched::GroupCtx g;
      pool.release_all();
      sched::init_group(g, idx, pool, b.s.profile, static_cast<int>(i));
      if (!sched::simple_scoring(g, w)) continue;
      for (size_t n = 0; n < idx.nodes.size(); ++n) {
        double general = sched::score_node(idx, g, b.s.profile, static_cast<int>(n));
        RC_ASSERT(sched::score_simple(idx, g, w, static_cast<int>(n)) == general);
        if (g.rq.req.gpu > 0 || idx.nodes[n].inv_cpu <= 0 || idx.nodes[n].inv_mem <= 0) continue;
        for (const auto& c : order.classes()) {
          if (c.cap != idx.nodes[n].cap) continue;
          const Resources& used = g.rq.nonprod ? idx.nodes[n].alloc_res : idx.nodes[n].alloc_req;
          double bound = sched::score_bound(c, g, w, idx.gpu_mixed, used.cpu_millis, used.memory_bytes);
          RC_ASSERT(general <= bound + 1e-9);
        }
      }
    }
  });
  REQUIRE(ok);
}

TEST_CASE("property: per-priority sums of preemptible work follow placements and evictions", "[preemption]") {
  bool ok = rc::check("preemptible_below matches the occupants", [] {
    ClusterBuilder b;
    build_shaped_cluster(b);
    add_plain_roles(b, "old", static_cast<int>(b.s.nodes.size()));
    for (auto& in : b.s.instances)
      if (*rc::gen::inRange(0, 5) == 0) in.priority.preemptible = false;
    sched::ClusterIndex idx(b.s);
    auto check = [&] {
      for (const auto& n : idx.nodes)
        for (int64_t rank : {0L, 10050L, 10100L, 10200L, 20000L, 30000L}) {
          for (bool reservations : {false, true}) {
            Resources want;
            for (int i : n.occupants) {
              const auto& x = idx.insts[static_cast<size_t>(i)];
              if (!x.inst->priority.preemptible || x.inst->priority.rank() >= rank) continue;
              const Resources& r = reservations ? x.reservation : x.inst->request;
              want.cpu_millis += r.cpu_millis;
              want.memory_bytes += r.memory_bytes;
              want.gpu += r.gpu;
              want.disk_bytes += r.disk_bytes;
            }
            RC_ASSERT(n.preemptible_below(rank, reservations) == want);
          }
        }
      for (int64_t rank : {0L, 10050L, 10100L, 10200L, 20000L, 30000L}) {
        bool any = false;
        for (const auto& x : idx.insts)
          any = any || (x.node >= 0 && x.inst->priority.preemptible && x.inst->priority.rank() < rank);
        RC_ASSERT(idx.preemptible_below_anywhere(rank) == any);
      }
    };
    check();
    // Evict some, place some elsewhere, and check again.
    for (size_t i = 0; i < idx.insts.size(); ++i) {
      if (idx.insts[i].node < 0 || !*rc::gen::arbitrary<bool>()) continue;
      idx.evict(static_cast<int>(i));
      if (*rc::gen::arbitrary<bool>())
        idx.place(static_cast<int>(i), *rc::gen::inRange(0, static_cast<int>(idx.nodes.size())), {}, {});
    }
    check();
  });
  REQUIRE(ok);
}

TEST_CASE("property: key_less orders instances as their keys compare as strings", "[preemption]") {
  bool ok = rc::check("key_less is the string order of keys", [] {
    ClusterBuilder b;
    b.node("n0", 1000, 1);
    // Names that share prefixes and differ in length, and ordinals of different widths
    // ("10" sorts before "9").
    auto name = rc::gen::element<std::string>("a", "ab", "a-b", "b", "a.b", "z9", "Z");
    int count = *rc::gen::inRange(2, 30);
    for (int i = 0; i < count; ++i) {
      std::string tenant = *name, app = *name, role = *name;
      if (!b.s.roles.count(fmt::format("{}/{}/{}", tenant, app, role))) b.role(tenant, app, role, res(100, 1));
      b.instance(tenant, app, role, *rc::gen::element(0, 1, 9, 10, 11, 100, 2147483647));
    }
    sched::ClusterIndex idx(b.s);
    for (size_t i = 0; i < idx.insts.size(); ++i) {
      for (size_t j = 0; j < idx.insts.size(); ++j)
        RC_ASSERT(idx.key_less(static_cast<int>(i), static_cast<int>(j)) ==
                  (idx.insts[i].inst->key() < idx.insts[j].inst->key()));
      // instance_index finds the first instance with that key (keys may repeat here).
      size_t first = 0;
      while (b.s.instances[first].key() != b.s.instances[i].key()) ++first;
      RC_ASSERT(idx.instance_index(b.s.instances[i].key()) == static_cast<int>(first));
    }
  });
  REQUIRE(ok);
}

TEST_CASE("instance_index: keys that name no instance", "[scheduler]") {
  ClusterBuilder b;
  b.node("n0", 1000, 1);
  b.role("t1", "shop", "web", res(100, 1));
  b.instance("t1", "shop", "web", 0);
  b.instance("t1", "shop", "web", 7);
  sched::ClusterIndex idx(b.s);
  CHECK(idx.instance_index("0.web.shop.t1") == 0);
  CHECK(idx.instance_index("7.web.shop.t1") == 1);
  for (const char* bad : {"", "web.shop.t1", ".web.shop.t1", "1.web.shop.t1", "07.web.shop.t1", "+7.web.shop.t1",
                          "7.web.shop", "7.web.shop.t2", "7", "x.web.shop.t1", "99999999999.web.shop.t1"})
    CHECK(idx.instance_index(bad) == -1);
}
