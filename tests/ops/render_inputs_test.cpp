// Render inputs: loaded once per command, stored typed in the app records in the format
// earlier versions wrote, and the --config-file read exactly once, its errors reported
// rather than dropped.
#include <catch2/catch.hpp>

#include "ops/propagate.hpp"
#include "ops/render_inputs.hpp"
#include "ops/submission.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

using json = nlohmann::json;

TEST_CASE("render inputs: stored as {overrides, jpaths, repo, limits, config_file} and read back", "[ops][inputs]") {
  ops::RenderInputs in;
  in.overrides = {{"replicas", 5}};
  in.jpaths = {"/lib/jsonnet"};
  in.repo = {"/specs"};
  in.limits.timeout_ms = 2000;
  in.config_file = ops::ConfigFileInput{"cfg.yaml", {{"config", {{"a", 1}}}}};
  json j = in;
  CHECK(j == json{{"overrides", {{"replicas", 5}}},
                  {"jpaths", {"/lib/jsonnet"}},
                  {"repo", {"/specs"}},
                  {"limits", {{"timeout_ms", 2000}, {"max_output_bytes", 16 << 20}, {"memory_limit_bytes", 2048LL << 20}}},
                  {"config_file", {{"path", "cfg.yaml"}, {"document", {{"config", {{"a", 1}}}}}}}});
  auto back = j.get<ops::RenderInputs>();
  CHECK(json(back) == j);

  // Records written before a field existed (or by fixtures) read as the defaults.
  auto old = json::object().get<ops::RenderInputs>();
  CHECK(old.overrides == json::object());
  CHECK(old.jpaths.empty());
  CHECK(old.limits.timeout_ms == 10000);
  CHECK_FALSE(old.config_file);
  CHECK_FALSE(json(old).contains("config_file"));
}

TEST_CASE("render inputs: a broken --config-file is an error of the command, with its location", "[ops][inputs]") {
  OpsFixture f;
  f.add_nodes(1);
  f.write_app("apps/svc", "svc");
  f.dir().write("cfg.yaml", "config: [1, 2]\nwhat: 1\n");
  ops::SubmitRequest request;
  request.dirs = {(f.dir().path() / "apps" / "svc").string()};
  request.render.config_file = (f.dir().path() / "cfg.yaml").string();
  int64_t before = f.revision();
  auto submitted = ops::submit(f.ws(), request);
  REQUIRE_FALSE(submitted);
  REQUIRE(submitted.error().size() == 2);
  CHECK(submitted.error()[0].location.file == request.render.config_file);
  CHECK(submitted.error()[0].path == "config");
  CHECK(submitted.error()[1].message == "unknown top-level key");
  CHECK(f.revision() == before);

  request.render.config_file = (f.dir().path() / "missing.yaml").string();
  auto missing = ops::load_render_inputs(request.render);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().front().message == "cannot read file");
}

TEST_CASE("render inputs: the --config-file is read once, and renders and records use that one read", "[ops][inputs]") {
  OpsFixture f;
  f.add_nodes(2);
  f.write_app("apps/svc", "svc");
  auto file = f.dir().write("cfg.yaml", "config:\n  svc:\n    replicas: 4\n");
  ops::RenderSettings settings;
  settings.config_file = file.string();
  auto inputs = ops::load_render_inputs(settings);
  REQUIRE(inputs);
  REQUIRE(inputs->config_file);
  CHECK(inputs->config_file->document == json{{"config", {{"svc", {{"replicas", 4}}}}}});

  // The file changes (here: breaks) after it was read. Nothing reads it again: the
  // render sees the values read first, and the record keeps that very document.
  f.dir().write("cfg.yaml", "config: broken: [\n");
  auto center = StoreConfigSource::load(f.store());
  REQUIRE(center);
  auto sub = ops::prepare_submission("default", {(f.dir().path() / "apps" / "svc").string()}, *inputs, {}, f.state(),
                                     &*center);
  REQUIRE(sub);
  REQUIRE((*sub)->apps.size() == 1);
  const AppRecord& record = (*sub)->apps[0].record;
  CHECK(record.workload.roles.at(0).replicas == 4);
  auto recorded = record.render_inputs.get<ops::RenderInputs>();
  REQUIRE(recorded.config_file);
  CHECK(recorded.config_file->path == file.string());
  CHECK(recorded.config_file->document == inputs->config_file->document);

  // A re-render layers the recorded document over the centers, as at submit.
  auto snap = ops::app_snapshot(*center, record);
  CHECK(snap.config.at("svc.replicas").value == 4);
}

}  // namespace gaia::test
