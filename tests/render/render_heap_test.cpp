// The render heap (render/render_heap.hpp): a render's child allocates from mimalloc and
// still frees what its parent allocated before the fork with glibc; every other process
// keeps glibc's malloc.

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "render/render_heap.hpp"
#include "render/sandbox.hpp"
#include "tests/render/render_test_util.hpp"

namespace render = gaia::render;

namespace {

// The test process's mapped address space, as the heap's own check reads it.
size_t mapped_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  unsigned long pages = 0;
  if (f) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// Limits for a child with `mib` MiB of address space above what this process maps.
render::SandboxLimits room_above_mapped(size_t mib, int timeout_ms = 5000) {
  render::SandboxLimits limits;
  limits.timeout_ms = timeout_ms;
  limits.memory_limit_bytes = mapped_bytes() + (mib << 20);
  return limits;
}

// The body of a child that switches and then allocates and frees as a render does:
// small, medium and large blocks from mimalloc, blocks past 32 MiB and a block past
// 1 GiB from glibc, and the parent's blocks freed with glibc, interleaved. A block freed
// by the wrong allocator aborts the child. Returns a summary, or what went wrong.
std::string allocate_as_a_render(std::vector<std::string>* parents) {
  auto early = std::make_unique<std::string>(1000, 'e');  // Before the switch: glibc.
  if (render::owned_by_render_heap(early->data())) return "an allocation before the switch came from mimalloc";
  std::string why;
  if (!render::enter_render_heap(&why)) return "enter_render_heap refused: " + why;
  if (!render::in_render_heap()) return "not in the render heap after the switch";
  if (render::owned_by_render_heap(parents->front().data())) return "the parent's memory is taken for mimalloc's";
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t owned = 0;
  for (size_t size : {size_t{8}, size_t{24}, size_t{100}, size_t{4096}, size_t{70000}, size_t{3} << 20}) {
    for (int i = 0; i < 50; ++i) {
      blocks.push_back(std::make_unique<char[]>(size));
      owned += render::owned_by_render_heap(blocks.back().get()) ? 1 : 0;
    }
  }
  // Not touched (new without (), so no zeroing): only address space is taken.
  std::unique_ptr<char[]> past_segment(new char[(size_t{32} << 20) + 1]);
  std::unique_ptr<char[]> past_gib;
  try {
    past_gib.reset(new char[(size_t{1} << 30) + 1]);
  } catch (const std::bad_alloc&) {
    // A machine that does not overcommit (vm.overcommit_memory=2) may refuse 1 GiB; the
    // block's way back to glibc is then untested here, the rest still is.
  }
  const size_t large_owned = (render::owned_by_render_heap(past_segment.get()) ? 1 : 0) +
                             (render::owned_by_render_heap(past_gib.get()) ? 1 : 0);
  parents->clear();
  parents->shrink_to_fit();
  early.reset();
  blocks.clear();
  past_segment.reset();
  past_gib.reset();
  std::vector<std::string> again(5000, std::string(64, 'a'));
  for (const auto& s : again) owned += render::owned_by_render_heap(s.data()) ? 1 : 0;
  return fmt::format("owned {}, large owned {}", owned, large_owned);
}

}  // namespace

TEST_CASE("render heap: the setup script installs mimalloc and only a render's child uses it", "[render_heap]") {
  const auto& info = render::load_render_heap();
  INFO(info.why_not);
  // scripts/setup.sh installs libmimalloc-dev; without it renders are slower, not wrong,
  // but the test suite checks the setup did its part.
  REQUIRE(info.available);
  CHECK_THAT(info.version, Catch::StartsWith("mimalloc 2.0."));
  CHECK_FALSE(render::in_render_heap());
  // This process allocates from glibc, which mimalloc does not own.
  auto mine = std::make_unique<std::string>(4096, 'p');
  CHECK_FALSE(render::owned_by_render_heap(mine->data()));
}

TEST_CASE("render heap: the child allocates from mimalloc and frees the parent's memory with glibc",
          "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  // Allocated by glibc in this process; the child frees its copy of them.
  std::vector<std::string> parents;
  for (int i = 0; i < 2000; ++i) parents.push_back(std::string(static_cast<size_t>(i % 300) + 20, 'b'));

  const auto limits = room_above_mapped(4096);
  // From this thread, and from another one, as `gaia validate -j 2` forks its renders.
  auto run = [&] {
    return render::run_sandboxed(limits, [&](render::SandboxChannel&) { return allocate_as_a_render(&parents); });
  };
  auto here = run();
  render::SandboxOutcome there;
  std::thread([&] { there = run(); }).join();
  for (const auto* out : {&here, &there}) {
    INFO(out->error);
    REQUIRE(out->status == render::SandboxOutcome::Status::Ok);
    CHECK(out->payload == "owned 5300, large owned 0");
  }
  // The parent's own copy is untouched, and the parent never switched.
  CHECK(parents.size() == 2000);
  CHECK_FALSE(render::in_render_heap());
}

TEST_CASE("render heap: a memory limit too small for mimalloc leaves the child on glibc", "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  const auto limits = room_above_mapped(100);
  auto out = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string {
    std::string why;
    if (render::enter_render_heap(&why)) return "entered";
    std::vector<std::string> work(10000, std::string(100, 'w'));
    return (render::in_render_heap() ? "switched anyway: " : "glibc: ") + why;
  });
  REQUIRE(out.status == render::SandboxOutcome::Status::Ok);
  CHECK_THAT(out.payload, Catch::StartsWith("glibc: the memory limit of "));
  CHECK_THAT(out.payload, Catch::Contains("leaves mimalloc too little address space"));
}

TEST_CASE("render heap: running out of memory in the child is std::bad_alloc, not a crash", "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  const auto limits = room_above_mapped(512);
  auto out = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string {
    if (!render::enter_render_heap()) return "not entered";
    // Many blocks small enough for mimalloc, until the limit stops it and then glibc.
    std::vector<std::unique_ptr<char[]>> blocks;
    try {
      while (true) blocks.emplace_back(new char[1 << 20]);
    } catch (const std::bad_alloc&) {
      const size_t got = blocks.size();
      blocks.clear();
      // The heap still works for what fits.
      std::string after(1 << 20, 'x');
      return render::owned_by_render_heap(after.data()) && got > 100 ? "bad_alloc" : "bad_alloc, then broken";
    }
  });
  REQUIRE(out.status == render::SandboxOutcome::Status::Ok);
  CHECK(out.payload == "bad_alloc");
}

TEST_CASE("render heap: memory mimalloc freed makes room for glibc's large blocks under the limit",
          "[render_heap]") {
  REQUIRE(render::load_render_heap().available);
  const auto limits = room_above_mapped(400, 10000);
  auto out = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string {
    if (!render::enter_render_heap()) return "not entered";
    {
      // 200 MiB of small blocks (a template's values), then all freed.
      std::vector<std::unique_ptr<char[]>> small;
      small.reserve(200 * 1024);
      for (int i = 0; i < 200 * 1024; ++i) small.emplace_back(new char[1024]);
    }
    // Blocks past mimalloc's bound come from glibc, which needs the address space back.
    std::vector<std::unique_ptr<char[]>> large;
    try {
      while (true) large.emplace_back(new char[size_t{40} << 20]);
    } catch (const std::bad_alloc&) {
    }
    return fmt::format("{}", large.size());
  });
  REQUIRE(out.status == render::SandboxOutcome::Status::Ok);
  // Without mimalloc giving its freed segments back it is 3 (120 MiB); with it, 8 or 9.
  CHECK(std::stoi(out.payload) >= 6);
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
  // The child counts only when its probe allocation came from mimalloc.
  CHECK(stats.evaluations == 1);
  CHECK(stats.heap_evaluations == 1);
  CHECK(stats.glibc_reason.empty());
  const auto& outputs = out->main.at("outputs");
  CHECK(outputs.at("joined") == "node-001,node-002,node-003");
  CHECK(outputs.at("yaml") == "\"a\":\n- \"node-001\"\n- \"node-002\"");

  // Under a limit too small for mimalloc the render still succeeds, on glibc, and says why.
  render::RenderStats small;
  req.stats = &small;
  req.options.memory_limit_bytes = mapped_bytes() + (size_t{120} << 20);
  auto on_glibc = render::evaluate(req);
  REQUIRE(on_glibc.has_value());
  CHECK(on_glibc->main == out->main);
  CHECK(small.heap_evaluations == 0);
  CHECK_THAT(small.glibc_reason, Catch::Contains("leaves mimalloc too little address space"));
}

TEST_CASE("render heap: how much address space the child must have left for mimalloc", "[render_heap]") {
  const size_t mib = size_t{1} << 20;
  const size_t headroom = render::k_address_space_headroom;
  CHECK_FALSE(render::address_space_refusal(100 * mib + headroom, 100 * mib));  // Exactly enough.
  CHECK(render::address_space_refusal(100 * mib + headroom - 1, 100 * mib));
  // A limit below what is already mapped (no underflow into a huge room).
  auto below = render::address_space_refusal(64 * mib, 100 * mib);
  REQUIRE(below);
  CHECK(*below == "the memory limit of 64 MiB leaves mimalloc too little address space (100 MiB in use, 256 MiB "
                  "needed above it)");
  // Not knowing what is mapped is no room.
  CHECK_THAT(render::address_space_refusal(size_t{64} << 30, 0).value_or(""), Catch::Contains("/proc/self/statm"));
}
