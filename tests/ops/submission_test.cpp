// Plan and submit without the CLI: the examples resolved against a temporary SQLite
// store, rendered, decided by plan_submit; plan writes nothing, submit commits the
// decision and runs the controllers; each record keeps the inputs it was rendered
// with, and --wait reports what still blocks.
#include <catch2/catch.hpp>

#include "ops/render_inputs.hpp"
#include "ops/submission.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

namespace {

ops::SubmitRequest examples_request(const std::vector<std::string>& apps) {
  ops::SubmitRequest r;
  for (const auto& a : apps) r.dirs.push_back((ops_examples_dir() / a).string());
  return r;
}

}  // namespace

TEST_CASE("submission: plan decides on the store's state and writes nothing", "[ops][submit]") {
  OpsFixture f;
  f.add_nodes(4);
  int64_t before = f.revision();
  auto planned = ops::plan(f.ws(), examples_request({"zookeeper"}));
  REQUIRE(planned);
  CHECK(f.revision() == before);
  CHECK(planned->state.revision == before);
  REQUIRE(planned->submission->apps.size() == 1);
  CHECK(planned->submission->apps[0].record.name == "zookeeper");
  CHECK(planned->outcome.placed == 3);
  CHECK(f.load().apps.empty());
}

TEST_CASE("submission: submit deploys a chain, dependencies first, and runs the controllers", "[ops][submit]") {
  OpsFixture f;
  f.add_nodes(6);
  auto request = examples_request({"kafka"});
  request.render.sets = {"brokers=4"};
  auto submitted = ops::submit(f.ws("op-submit"), request);
  REQUIRE(submitted);
  const auto& sub = *submitted->submission;
  REQUIRE(sub.apps.size() == 2);
  CHECK(sub.apps[0].record.name == "zookeeper");
  CHECK(sub.apps[1].record.name == "kafka");
  CHECK(sub.app_names() == std::vector<std::string>{"zookeeper", "kafka"});
  CHECK(submitted->outcome.changed());

  ClusterState st = f.load();
  CHECK(running_of(st, "zookeeper") == 3);
  CHECK(running_of(st, "kafka") == 4);  // --set applies to the root only.
  CHECK(ops::blocking_instances(st, "default", sub.app_names()).empty());
  auto events = f.state().events_after(0);
  REQUIRE(events);
  CHECK(has_event(*events, "Scheduled"));
  for (const auto& e : *events)
    if (e.reason == "Scheduled") CHECK(e.op == "op-submit");

  // The records keep their inputs typed: overrides for the root, none for the
  // dependency, and the repository roots resolution used.
  auto kafka = st.find_app("default", "kafka")->render_inputs.get<ops::RenderInputs>();
  auto zk = st.find_app("default", "zookeeper")->render_inputs.get<ops::RenderInputs>();
  CHECK(kafka.overrides == nlohmann::json{{"brokers", 4}});
  CHECK(zk.overrides == nlohmann::json::object());
  REQUIRE(kafka.repo.size() == 1);
  CHECK(std::filesystem::path(kafka.repo[0]) == std::filesystem::weakly_canonical(ops_examples_dir()));
  CHECK_FALSE(kafka.config_file);

  // The same submission again changes nothing.
  int64_t before = f.revision();
  auto again = ops::submit(f.ws(), request);
  REQUIRE(again);
  CHECK_FALSE(again->outcome.changed());
  // The running dependency is reused this time, not deployed again.
  REQUIRE(again->submission->reused.size() == 1);
  CHECK(again->submission->reused[0].name == "zookeeper");
  CHECK(again->controllers.outcome.batch.empty());
  CHECK(f.revision() == before);
}

TEST_CASE("submission: spec errors come before errors of the render inputs, and nothing is written", "[ops][submit]") {
  OpsFixture f;
  f.add_nodes(1);
  int64_t before = f.revision();
  auto request = examples_request({"zookeeper"});
  request.render.sets = {"not-an-assignment"};
  auto bad_set = ops::submit(f.ws(), request);
  REQUIRE_FALSE(bad_set);
  CHECK(bad_set.error().front().message.find("not-an-assignment") != std::string::npos);

  request.dirs = {(f.dir().path() / "missing").string()};
  auto missing = ops::submit(f.ws(), request);
  REQUIRE_FALSE(missing);
  REQUIRE(missing.error().size() == 1);
  CHECK(missing.error().front().message == "no such file or directory");
  CHECK(f.revision() == before);
}

TEST_CASE("submission: wait_for_apps names the instances that keep a submission from running", "[ops][submit]") {
  OpsFixture f;
  f.add_nodes(1, 2000, 4);
  f.write_app("apps/svc", "svc");
  ops::SubmitRequest request;
  request.dirs = {(f.dir().path() / "apps" / "svc").string()};
  request.render.sets = {"replicas=30"};  // 30 x 100m CPU: 20 fit on the node.
  auto submitted = ops::submit(f.ws(), request);
  REQUIRE(submitted);
  ops::FollowOptions options;
  options.timeout = std::chrono::milliseconds(200);
  auto w = ops::wait_for_apps(f.ws(), "default", {"svc"}, options);
  REQUIRE(w);
  CHECK_FALSE(w->done);
  CHECK(running_of(w->state, "svc") > 0);
  CHECK(w->blockers.size() == 30 - running_of(w->state, "svc"));
  CHECK(w->blockers.front().state == "Pending");
  CHECK(w->blockers.front().reason.find("ResourceFit") != std::string::npos);

  // A missing app blocks too: it was deleted while waiting.
  auto gone = ops::blocking_instances(w->state, "default", {"nope"});
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].state == "Missing");
}

}  // namespace gaia::test
