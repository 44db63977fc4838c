// A pass of the controllers on several threads decides what one thread decides: each
// controller sees the batches of the controllers before it in the pass, also when the
// later ones had already started on the state before those batches
// (controllers/reconcile.hpp).
#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"

namespace gaia {
namespace {

bool has_node(const ClusterState& st, const std::string& name) { return st.find_node(name) != nullptr; }

ControllerResult add_node(const std::string& name) {
  ControllerResult r;
  Node n;
  n.name = name;
  r.batch.put_nodes.push_back(n);
  r.batch.event("Added", name);
  return r;
}

// Adds x once.
ControllerResult add_x(const ClusterState& st, const ControllerContext&) {
  return has_node(st, "x") ? ControllerResult{} : add_node("x");
}
// Adds y once x is there: in the pass that added x, if it sees x's batch.
ControllerResult add_y_after_x(const ClusterState& st, const ControllerContext&) {
  return has_node(st, "x") && !has_node(st, "y") ? add_node("y") : ControllerResult{};
}
// Adds z once y is there.
ControllerResult add_z_after_y(const ClusterState& st, const ControllerContext&) {
  return has_node(st, "y") && !has_node(st, "z") ? add_node("z") : ControllerResult{};
}
// Changes nothing, and asks to run again at a time that depends on what it sees.
ControllerResult idle_controller(const ClusterState& st, const ControllerContext&) {
  return ControllerResult{{}, 1000 - static_cast<int64_t>(st.snapshot.nodes.size())};
}

std::vector<std::string> node_names(const Batch& b) {
  std::vector<std::string> out;
  for (const auto& n : b.put_nodes) out.push_back(n.name);
  return out;
}

}  // namespace

TEST_CASE("reconcile: on any number of threads a controller sees the changes of those before it in the pass",
          "[reconcile][threads]") {
  const std::vector<NamedController> controllers = {
      {"idle0", &idle_controller}, {"add_x", &add_x},           {"idle1", &idle_controller},
      {"add_y", &add_y_after_x},   {"idle2", &idle_controller}, {"idle3", &idle_controller},
      {"add_z", &add_z_after_y},   {"idle4", &idle_controller},
  };
  for (unsigned threads : {1u, 2u, 3u, 4u, 8u}) {
    INFO(threads << " thread(s)");
    ControllerContext ctx;
    ctx.threads = threads;
    for (int run = 0; run < 20; ++run) {
      ReconcileOutcome out = reconcile(ClusterState{}, ctx, controllers);
      // One pass adds x, y and z in turn; the second finds nothing to do.
      CHECK(out.passes == 2);
      CHECK(out.converged);
      CHECK(node_names(out.batch) == std::vector<std::string>{"x", "y", "z"});
      CHECK(out.active == std::vector<std::string>{"add_x", "add_y", "add_z"});
      CHECK(out.after.snapshot.nodes.size() == 3);
      // The wake-up asked for on the last pass, which saw the three nodes.
      CHECK(out.wake_at_ms == 997);

      ReconcileOutcome kept = reconcile_batch(ClusterState{}, ctx, controllers);
      CHECK(node_names(kept.batch) == node_names(out.batch));
      CHECK(kept.passes == 2);
    }
  }
}

TEST_CASE("reconcile: a controller's exception reaches the caller from any thread", "[reconcile][threads]") {
  static auto boom = [](const ClusterState&, const ControllerContext&) -> ControllerResult {
    throw std::logic_error("a bug in a controller");
  };
  const std::vector<NamedController> controllers = {
      {"idle0", &idle_controller}, {"idle1", &idle_controller}, {"boom", +boom}, {"idle2", &idle_controller}};
  for (unsigned threads : {1u, 4u}) {
    ControllerContext ctx;
    ctx.threads = threads;
    CHECK_THROWS_WITH(reconcile(ClusterState{}, ctx, controllers), "a bug in a controller");
  }
}

TEST_CASE("reconcile: a controller that throws only on a state it ran on ahead of a change is not an error",
          "[reconcile][threads]") {
  // It throws unless x is there: one thread runs it only after add_x, so neither may throw.
  static auto needs_x = [](const ClusterState& st, const ControllerContext&) -> ControllerResult {
    if (!has_node(st, "x")) throw std::logic_error("saw the state before x");
    return {};
  };
  static auto slow_add_x = [](const ClusterState& st, const ControllerContext& ctx) -> ControllerResult {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return add_x(st, ctx);
  };
  const std::vector<NamedController> controllers = {{"add_x", +slow_add_x}, {"needs_x", +needs_x}};
  for (unsigned threads : {1u, 2u, 4u}) {
    INFO(threads << " thread(s)");
    ControllerContext ctx;
    ctx.threads = threads;
    ReconcileOutcome out = reconcile(ClusterState{}, ctx, controllers);
    CHECK(node_names(out.batch) == std::vector<std::string>{"x"});
  }
}

}  // namespace gaia
