// Saved plans without the CLI: a plan saved with the hash of every input and the store
// revision applies exactly the reviewed records, and is refused (nothing applied) when an
// input file or the store drifted since.
#include <catch2/catch.hpp>

#include <algorithm>

#include "ops/saved_plan.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

namespace {

struct PlanFixture {
  OpsFixture f;
  std::filesystem::path file;
  ops::SetRequest request;

  PlanFixture() {
    f.add_nodes(2);
    f.write_app("set/a", "a");
    f.write_app("set/b", "b");
    file = f.dir().path() / "plan.json";
    request.paths = {(f.dir().path() / "set").string()};
    request.source = "ci";
  }

  Result<ops::PlanSaved> save() { return ops::save_plan(f.ws(), request, f.store_path().string(), file); }
  Result<ops::Applied> apply(bool dry_run = false) {
    return ops::apply_saved_plan(f.ws("op-apply"), file, f.store_path().string(), ops::ApplyOptions{dry_run, {}});
  }
};

bool mentions(const Diagnostics& ds, const std::string& text) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) { return d.message.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("saved plan: saved with its inputs hashed, then applied exactly as reviewed", "[ops][saved-plan]") {
  PlanFixture p;
  int64_t at = p.f.revision();
  auto saved = p.save();
  REQUIRE(saved);
  CHECK(p.f.revision() == at);  // Planning writes nothing to the store.
  CHECK(saved->saved.revision == at);
  CHECK(saved->saved.source == "ci");
  CHECK(saved->saved.request.apps.size() == 2);
  CHECK(saved->saved.decision.size() == 2);
  std::string config = std::filesystem::weakly_canonical(p.f.dir().path() / "set" / "a" / "config.jsonnet").string();
  CHECK(saved->saved.inputs.count(config) == 1);

  auto read = ops::read_saved_plan(p.file);
  REQUIRE(read);
  CHECK(read->revision == at);
  CHECK(read->inputs == saved->saved.inputs);
  CHECK(ops::plan_drift(*read, p.file, std::filesystem::weakly_canonical(p.f.store_path()).string(), at,
                        ops::gaia_version())
            .empty());

  auto dry = p.apply(true);
  REQUIRE(dry);
  CHECK(p.f.revision() == at);
  auto applied = p.apply();
  REQUIRE(applied);
  CHECK(applied->plan.changed());
  REQUIRE(applied->controllers);
  CHECK(running_of(applied->final_state(), "a") == 1);
  CHECK(running_of(applied->final_state(), "b") == 1);
  CHECK(p.f.load().find_app("default", "a")->source == "ci");
}

TEST_CASE("saved plan: a changed input file is drift, and nothing is applied", "[ops][saved-plan]") {
  PlanFixture p;
  REQUIRE(p.save());
  p.f.dir().write("set/a/config.jsonnet", "{ replicas: 2 }\n");
  p.f.dir().write("set/c/app.yaml", "name: c\nversion: 1.0.0\n");
  int64_t at = p.f.revision();
  auto applied = p.apply();
  REQUIRE_FALSE(applied);
  const Diagnostics& ds = applied.error();
  CHECK(mentions(ds, "drifted since the plan was made: "));
  CHECK(mentions(ds, "config.jsonnet changed"));
  CHECK(mentions(ds, "the set now holds "));
  CHECK(ds.back().hint.find("nothing was applied") != std::string::npos);
  CHECK(p.f.revision() == at);
  CHECK(p.f.load().apps.empty());
}

TEST_CASE("saved plan: a store written since the plan is drift, and nothing is applied", "[ops][saved-plan]") {
  PlanFixture p;
  auto saved = p.save();
  REQUIRE(saved);
  p.f.add_nodes(1);
  auto applied = p.apply();
  REQUIRE_FALSE(applied);
  CHECK(mentions(applied.error(), fmt::format("the plan was made at revision {}", saved->saved.revision)));
  CHECK(p.f.load().apps.empty());

  // Another store is drift too.
  OpsFixture other;
  auto elsewhere = ops::apply_saved_plan(other.ws(), p.file, other.store_path().string(), {});
  REQUIRE_FALSE(elsewhere);
  CHECK(mentions(elsewhere.error(), "the plan was made against store "));
}

TEST_CASE("saved plan: a file that is not a plan is refused with a hint", "[ops][saved-plan]") {
  OpsFixture f;
  auto file = f.dir().write("not-a-plan.json", "{\"format\": \"something/v2\"}");
  auto read = ops::read_saved_plan(file);
  REQUIRE_FALSE(read);
  CHECK(read.error().front().message == "not a gaia plan (expected format gaia-plan/v1)");
}

}  // namespace gaia::test
