// The render heap (render/render_heap.hpp): a render's child allocates from mimalloc and
// still frees what its parent allocated before the fork with glibc; every other process
// keeps glibc's malloc.

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "render/render_heap.hpp"
#include "render/sandbox.hpp"
#include "tests/render/render_test_util.hpp"

namespace render = gaia::render;

TEST_CASE("render heap: the setup script installs mimalloc and only a render's child uses it", "[render_heap]") {
  const auto& info = render::load_render_heap();
  INFO(info.detail);
  // scripts/setup.sh installs libmimalloc-dev; without it renders are slower, not wrong.
  REQUIRE(info.available);
  CHECK_THAT(info.detail, Catch::StartsWith("mimalloc 2."));
  CHECK_FALSE(render::in_render_heap());
  auto mine = std::make_unique<std::string>(4096, 'p');
  CHECK_FALSE(render::owned_by_render_heap(mine->data()));
}

TEST_CASE("render heap: the child allocates from mimalloc and frees the parent's memory with glibc",
          "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  // Allocated by glibc in this process; the child frees its copy of them.
  auto before_fork = std::make_unique<std::vector<std::string>>();
  for (int i = 0; i < 2000; ++i) before_fork->push_back(std::string(static_cast<size_t>(i % 300) + 20, 'b'));

  render::SandboxLimits limits;
  limits.timeout_ms = 5000;
  auto out = render::run_sandboxed(limits, [&](render::SandboxChannel&) -> std::string {
    auto early = std::make_unique<std::string>(1000, 'e');  // Before the switch: glibc.
    if (render::owned_by_render_heap(early->data())) return "an allocation before the switch came from mimalloc";
    if (!render::enter_render_heap()) return "enter_render_heap failed";
    if (!render::in_render_heap()) return "not in the render heap after the switch";
    if (render::owned_by_render_heap(before_fork->front().data()))
      return "the parent's memory is taken for mimalloc's";
    // Small, medium and large blocks, as a render makes them, all from mimalloc.
    std::vector<std::unique_ptr<char[]>> blocks;
    size_t owned = 0;
    for (size_t size : {size_t{8}, size_t{24}, size_t{100}, size_t{4096}, size_t{70000}, size_t{3} << 20}) {
      for (int i = 0; i < 50; ++i) {
        blocks.push_back(std::make_unique<char[]>(size));
        owned += render::owned_by_render_heap(blocks.back().get()) ? 1 : 0;
      }
    }
    // Frees of both kinds, interleaved: glibc's blocks go back to glibc, mimalloc's to
    // mimalloc (a block freed by the wrong one would abort the child).
    before_fork.reset();
    early.reset();
    blocks.clear();
    std::vector<std::string> again(5000, std::string(64, 'a'));
    for (const auto& s : again) owned += render::owned_by_render_heap(s.data()) ? 1 : 0;
    return fmt::format("owned {}", owned);
  });
  INFO(out.error);
  REQUIRE(out.status == render::SandboxOutcome::Status::Ok);
  CHECK(out.payload == "owned 5300");
  // The parent's own copy is untouched, and the parent never switched.
  CHECK(before_fork->size() == 2000);
  CHECK_FALSE(render::in_render_heap());
}

TEST_CASE("render heap: running out of memory in the child is std::bad_alloc, not a crash", "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  render::SandboxLimits limits;
  limits.timeout_ms = 5000;
  limits.memory_limit_bytes = size_t{256} << 20;
  auto out = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string {
    render::enter_render_heap();
    try {
      auto huge = std::make_unique<char[]>(size_t{1} << 30);
      return fmt::format("allocated {}", static_cast<const void*>(huge.get()));
    } catch (const std::bad_alloc&) {
      // The heap still works for what fits.
      std::string after(1 << 20, 'x');
      return render::owned_by_render_heap(after.data()) ? "bad_alloc" : "bad_alloc, then not from mimalloc";
    }
  });
  REQUIRE(out.status == render::SandboxOutcome::Status::Ok);
  CHECK(out.payload == "bad_alloc");
}

TEST_CASE("render heap: a render in its child allocates from mimalloc and gives the library's text",
          "[render_heap]") {
  // Sorting, formats, slices and manifests build and free many values in the child.
  gaia::test::TempApp app("{ names: [std.format('node-%03d', i) for i in std.range(1, 40)] }",
                          "function(config, deps, app) { roles: {}, outputs: {\n"
                          "  joined: std.join(',', std.sort(config.names, function(s) s[5:] + s[0:5])[0:3]),\n"
                          "  yaml: std.manifestYamlDoc({ a: config.names[0:2] }),\n"
                          "} }\n");
  render::RenderStats stats;
  auto req = app.request();
  req.stats = &stats;
  auto out = render::evaluate(req);
  REQUIRE(out.has_value());
  CHECK(stats.evaluations == 1);
  CHECK(stats.heap_evaluations == 1);
  const auto& outputs = out->main.at("outputs");
  CHECK(outputs.at("joined") == "node-001,node-002,node-003");
  CHECK(outputs.at("yaml") == "\"a\":\n- \"node-001\"\n- \"node-002\"");
}
