// gaia sim replay end to end: the real binary replays the checked-in sample of Alibaba's
// trace, reports as text and JSON, draws a plot with gnuplot, writes no store, and
// refuses bad traces and flags with their location and a hint.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

std::string sample_trace() { return examples_dir() + "/traces/alibaba-v2018-sample"; }

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("sim replay: the sample trace as a report and as JSON", "[cli][sim]") {
  Scratch s;
  RunResult text = ok(s, {"sim", "replay", sample_trace()});
  CHECK(contains(text.out, "16 machines"));
  CHECK(contains(text.out, "CPU ALLOC"));
  CHECK(contains(text.out, "Pending time over"));
  CHECK(contains(text.out, "Preemptions:"));
  CHECK(contains(text.out, "Near their data"));
  CHECK(contains(text.out, "Skipped 1 row of batch_task.csv: end_time not after start_time"));
  CHECK(contains(text.out, "weighted by time"));

  json doc = json::parse(ok(s, {"sim", "replay", sample_trace(), "-o", "json"}).out);
  CHECK(doc["format"] == "alibaba-v2018");
  CHECK(doc["machines"] == 16);
  CHECK(doc["placements"].get<int64_t>() >= doc["instances"].get<int64_t>() - doc["pending_at_end"].get<int64_t>());
  CHECK(doc["samples"].size() >= 50);
  CHECK(doc["skipped"]["batch_task.csv: no plan_cpu or plan_mem"] == 1);
  CHECK(doc["settings"]["tick_s"] == 10);
  CHECK(doc["mean_cpu_alloc"].get<double>() > 0.5);
  CHECK(doc["mean_cpu_alloc"].get<double>() < 1.0);
  // The mean is over time, not over samples: another step gives the same.
  json coarse = json::parse(ok(s, {"sim", "replay", sample_trace(), "--step", "2h", "-o", "json"}).out);
  CHECK(coarse["mean_cpu_alloc"].get<double>() == Approx(doc["mean_cpu_alloc"].get<double>()));
  // The sample is made so that the late online deployment preempts batch work and one
  // machine leaves service for half an hour.
  CHECK(doc["preemptions"].get<int64_t>() > 0);
  CHECK(doc["lost"].get<int64_t>() > 0);
  CHECK(doc["near"]["placements"].get<int64_t>() > 0);
  CHECK(doc["pending_time"]["p50_s"].get<int64_t>() <= doc["pending_time"]["p90_s"].get<int64_t>());
  bool one_down = false;
  for (const auto& smp : doc["samples"]) {
    CHECK(smp["cpu_alloc"].get<double>() <= 1.0 + 1e-9);
    one_down = one_down || smp["machines_up"] == 15;
  }
  CHECK(one_down);
  CHECK_FALSE(std::filesystem::exists(s.dir() / "state"));

  // The same trace and options give the same replay.
  json again = json::parse(ok(s, {"sim", "replay", sample_trace(), "-o", "json"}).out);
  CHECK(again["samples"] == doc["samples"]);
  CHECK(again["pending_time"] == doc["pending_time"]);
}

TEST_CASE("sim replay: policies and options change the replay", "[cli][sim]") {
  Scratch s;
  json gaia_run = json::parse(ok(s, {"sim", "replay", sample_trace(), "-o", "json"}).out);
  json best = json::parse(ok(s, {"sim", "replay", sample_trace(), "--policy", "best-fit", "-o", "json"}).out);
  CHECK(best["policy"] == "best-fit");
  CHECK(best["samples"] != gaia_run["samples"]);
  CHECK(gaia_run["migrations"] == 0);
  json moved = json::parse(
      ok(s, {"sim", "replay", sample_trace(), "--rebalance-budget", "50", "--rebalance-period", "5m", "-o", "json"}).out);
  CHECK(moved["migrations"].get<int64_t>() > 0);
  expect_exit(s, 2, {"sim", "replay", sample_trace(), "--rebalance-budget", "-1"});
  expect_exit(s, 2, {"sim", "replay", sample_trace(), "--rebalance-budget", "5", "--rebalance-period", "0s"});
  RunResult idle = expect_exit(s, 2, {"sim", "replay", sample_trace(), "--rebalance-period", "1m"});
  CHECK(contains(idle.err, "has no effect without --rebalance-budget"));
  json until = json::parse(ok(s, {"sim", "replay", sample_trace(), "--until", "1h", "--step", "5m", "-o", "json"}).out);
  CHECK(until["end_s"].get<int64_t>() <= 3600);
  CHECK(until["samples"].size() == 13);
}

TEST_CASE("sim replay: --plot draws the timeline with gnuplot", "[cli][sim]") {
  Scratch s;
  auto svg = s.dir() / "replay.svg";
  RunResult r = ok(s, {"sim", "replay", sample_trace(), "--plot", svg.string()});
  CHECK(contains(r.out, "Plot written to"));
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "<svg"));
  CHECK(contains(text, "cpu allocated"));
  CHECK(contains(text, "pending"));
  CHECK_FALSE(std::filesystem::exists(s.dir() / "replay.svg.tmp"));
  CHECK_FALSE(std::filesystem::exists(s.dir() / "replay.svg.gp.tmp"));

  auto png = s.dir() / "replay.png";
  ok(s, {"sim", "replay", sample_trace(), "--plot", png.string()});
  std::ifstream pin(png, std::ios::binary);
  char magic[4] = {};
  pin.read(magic, 4);
  CHECK(std::string(magic + 1, 3) == "PNG");

  RunResult bad = expect_exit(s, 2, {"sim", "replay", sample_trace(), "--plot", (s.dir() / "x.pdf").string()});
  CHECK(contains(bad.err, "name the file with .svg or .png"));
  RunResult nodir = expect_exit(s, 1, {"sim", "replay", sample_trace(), "--plot", (s.dir() / "no/such/x.svg").string()});
  CHECK(contains(nodir.err, "--plot"));
}

TEST_CASE("sim replay: bad traces are errors with their file and line", "[cli][sim]") {
  Scratch s;
  RunResult missing = expect_exit(s, 1, {"sim", "replay", (s.dir() / "nothing").string()});
  CHECK(contains(missing.err, "not a directory"));

  auto dir = s.dir() / "trace";
  write_file(dir / "machine_meta.csv", "m_1,0,17,A,96,100,USING\n");
  RunResult no_tasks = expect_exit(s, 1, {"sim", "replay", dir.string()});
  CHECK(contains(no_tasks.err, "batch_task.csv"));
  CHECK(contains(no_tasks.err, "the trace has no batch_task.csv"));

  write_file(dir / "batch_task.csv", "M1,4,j_1,1,Terminated,100,400,100,1.5\nR2_1,two,j_1,1,Terminated,410,500,50,0.5\n");
  RunResult bad_row = expect_exit(s, 1, {"sim", "replay", dir.string()});
  CHECK(contains(bad_row.err, "batch_task.csv:2"));
  CHECK(contains(bad_row.err, "whole number 0..1000000"));
}

TEST_CASE("sim replay: bad flags are usage errors", "[cli][sim]") {
  Scratch s;
  RunResult pol = expect_exit(s, 2, {"sim", "replay", sample_trace(), "--policy", "gaia-segregated"});
  CHECK(contains(pol.err, "gaia-segregated"));
  RunResult tick = expect_exit(s, 2, {"sim", "replay", sample_trace(), "--tick", "soon"});
  CHECK(contains(tick.err, "--tick"));
  expect_exit(s, 2, {"sim", "replay", sample_trace(), "--tick", "0s"});
  RunResult mem = expect_exit(s, 2, {"sim", "replay", sample_trace(), "--memory-unit", "lots"});
  CHECK(contains(mem.err, "--memory-unit"));
  expect_exit(s, 2, {"sim", "replay", sample_trace(), "--format", "borg-2019"});
  expect_exit(s, 2, {"sim", "replay", sample_trace(), "--cpu-unit", "0"});
  expect_exit(s, 2, {"sim", "replay"});
}

TEST_CASE("sim replay: Google's trace, found by its files, from part files", "[cli][sim]") {
  Scratch s;
  std::string dir = examples_dir() + "/traces/google-2011-sample";
  json doc = json::parse(ok(s, {"sim", "replay", dir, "-o", "json"}).out);
  CHECK(doc["format"] == "google-2011");
  CHECK(doc["machines"] == 40);
  CHECK(doc["preemptions"].get<int64_t>() > 0);
  CHECK(doc["lost"].get<int64_t>() > 0);
  // Rows after --until are counted once, as such.
  json early = json::parse(ok(s, {"sim", "replay", dir, "--until", "1h", "-o", "json"}).out);
  CHECK(early["skipped"].contains("task_events: after --until"));
  CHECK_FALSE(early["skipped"].contains("task_events: no SUBMIT in the trace"));
  json forced = json::parse(ok(s, {"sim", "replay", dir, "--format", "google-2011", "--cpu-unit", "32", "-o", "json"}).out);
  // The unit scales requests and machines alike: the same decisions.
  CHECK(forced["pending_time"] == doc["pending_time"]);
  // Alibaba's reader finds none of its files there.
  RunResult wrong = expect_exit(s, 1, {"sim", "replay", dir, "--format", "alibaba-v2018"});
  CHECK(contains(wrong.err, "the trace has no machine_meta.csv"));

  auto gz = s.dir() / "gz";
  write_file(gz / "machine_events.csv", "0,5,0,p,0.5,0.25\n");
  write_file(gz / "task_events" / "part-00000-of-00001.csv.gz", "x");
  RunResult compressed = expect_exit(s, 1, {"sim", "replay", gz.string()});
  CHECK(contains(compressed.err, "gunzip"));
  RunResult neither = expect_exit(s, 1, {"sim", "replay", s.dir().string()});
  CHECK(contains(neither.err, "holds no trace"));
}

TEST_CASE("sim replay: a plot's file name is never gnuplot commands", "[cli][sim]") {
  Scratch s;
  auto quoted = s.dir() / "it's.svg";
  ok(s, {"sim", "replay", sample_trace(), "--until", "30m", "--plot", quoted.string()});
  CHECK(std::filesystem::exists(quoted));
  auto sneaky = s.dir() / "a';system('touch pwned');'.svg";
  ok(s, {"sim", "replay", sample_trace(), "--until", "30m", "--plot", sneaky.string()});
  CHECK(std::filesystem::exists(sneaky));
  CHECK_FALSE(std::filesystem::exists(s.dir() / "pwned"));
  CHECK_FALSE(std::filesystem::exists("pwned"));
  // No temporary file is left beside the pictures, and they are not private.
  for (const auto& e : std::filesystem::directory_iterator(s.dir())) {
    INFO(e.path().string());
    CHECK(e.path().filename().string().find(".svg.") == std::string::npos);
  }
  CHECK((std::filesystem::status(quoted).permissions() & std::filesystem::perms::others_read) != std::filesystem::perms::none);
}
