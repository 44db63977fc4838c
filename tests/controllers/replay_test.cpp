// Trace replay: the scheduler's decisions over simulated time on small hand-made traces,
// where every wait, preemption and loss can be worked out by hand.
#include <catch2/catch.hpp>

#include "controllers/replay.hpp"

using namespace gaia;
using namespace gaia::sim;

namespace {

constexpr int64_t kGiB = 1024LL * 1024 * 1024;

TraceMachineEvent machine(const std::string& name, int64_t cores, const std::string& rack = "r1", int64_t t = 0,
                          bool up = true) {
  TraceMachineEvent e;
  e.time_s = t;
  e.machine = name;
  e.up = up;
  e.capacity.cpu_millis = cores * 1000;
  e.capacity.memory_bytes = 64 * kGiB;
  e.zone = "z1";
  e.rack = rack;
  return e;
}

TraceTask task(const std::string& job, const std::string& name, int64_t n, int64_t start, int64_t duration,
               int64_t cores, Band band = Band::Nonprod) {
  TraceTask t;
  t.job = job;
  t.name = name;
  t.instances = n;
  t.start_s = start;
  t.duration_s = duration;
  t.request.cpu_millis = cores * 1000;
  t.request.memory_bytes = kGiB;
  t.band = band;
  return t;
}

ReplayOptions every_second() {
  ReplayOptions o;
  o.tick_s = 1;
  o.step_s = 10;
  return o;
}

}  // namespace

TEST_CASE("replay: work that does not fit waits for a departure", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 8)};
  t.tasks = {task("j1", "a", 1, 0, 100, 8), task("j2", "b", 1, 10, 50, 8)};
  ReplayReport r = replay(t, every_second());
  CHECK(r.placements == 2);
  CHECK(r.finished == 2);
  // b waits from 10 until a leaves at 100, then runs its 50 seconds.
  CHECK(r.waits_s == std::vector<int64_t>{0, 90});
  CHECK(r.end_s == 150);
  CHECK(r.pending_at_end == 0);
  CHECK(wait_percentile(r, 50) == 0);
  CHECK(wait_percentile(r, 100) == 90);
  // Full from 0 to 150, whatever the sampling.
  CHECK(r.mean_cpu_alloc == Approx(1.0));
  // Sampled every 10 s: full from 0 to 150, empty at the end.
  REQUIRE(r.samples.size() >= 15);
  CHECK(r.samples[0].cpu_alloc == Approx(1.0));
  CHECK(r.samples[2].pending == 1);
  CHECK(r.samples.back().time_s == 150);
  CHECK(r.samples.back().running == 0);
}

TEST_CASE("replay: passes run on the tick, so arrivals wait for the next one", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 8)};
  t.tasks = {task("j1", "a", 1, 3, 10, 1), task("j2", "b", 1, 25, 10, 1)};
  ReplayOptions o = every_second();
  o.tick_s = 10;
  ReplayReport r = replay(t, o);
  CHECK(r.waits_s == std::vector<int64_t>{5, 7});
  CHECK(r.schedules == 2);
}

TEST_CASE("replay: a task after others starts when they finish in the replay", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4)};
  // The trace started R2 at 110, but the map waited for room and finishes later here.
  t.tasks = {task("j0", "hog", 1, 0, 60, 4), task("j1", "M1", 1, 10, 100, 4), task("j1", "R2_1", 1, 110, 10, 1)};
  t.tasks[2].deps = {"M1"};
  ReplayReport r = replay(t, every_second());
  // M1 waits 50 s, ends at 160; R2 arrives then, and is placed at once.
  CHECK(r.waits_s == std::vector<int64_t>{0, 0, 50});
  CHECK(r.end_s == 170);
  CHECK(r.waiting_at_end == 0);
}

TEST_CASE("replay: a task reads the output its predecessor left on its node", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4, "r1"), machine("m2", 4, "r2"), machine("m3", 4, "r3")};
  // Fillers leave every node equally full when the reducer comes, so without the
  // locality score the tie goes to the first name, m1, while the map ran on m3.
  t.tasks = {task("a", "fill", 2, 0, 1000, 3), task("j1", "M1", 1, 0, 10, 1), task("b", "fill", 1, 12, 1000, 3),
             task("j1", "R2_1", 1, 20, 10, 1)};
  t.tasks[3].deps = {"M1"};
  ReplayReport r = replay(t, every_second());
  CHECK(r.near_placements == 1);
  CHECK(r.near_node == 1);
  ReplayOptions o = every_second();
  o.near = false;
  ReplayReport off = replay(t, o);
  CHECK(off.near_placements == 1);
  CHECK(off.near_node == 0);
  CHECK(off.near_rack == 0);
}

TEST_CASE("replay: the output of a job goes with its machine, and with the job", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4, "r1"), machine("m2", 4, "r2"), machine("m1", 4, "r1", 15, false)};
  t.tasks = {task("j1", "M1", 1, 0, 10, 1), task("j1", "R2_1", 1, 20, 10, 1)};
  t.tasks[1].deps = {"M1"};
  ReplayReport r = replay(t, every_second());
  // The map ran on m1, which left at 15 with its output: the reducer finds no data.
  CHECK(r.near_placements == 1);
  CHECK(r.near_gone == 1);
  CHECK(r.lost == 0);
  CHECK(r.finished == 2);
  CHECK(r.samples.back().running == 0);
}

TEST_CASE("replay: prod work preempts batch work, which queues again and reruns", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 8)};
  t.tasks = {task("batch", "b", 2, 0, 100, 4), task("svc", "online0", 1, 30, 0, 4, Band::Prod)};
  ReplayReport r = replay(t, every_second());
  CHECK(r.preemptions == 1);
  CHECK(r.lost == 0);
  // The victim reruns its whole 100 s once the other batch instance leaves at 100.
  CHECK(r.placements == 4);
  CHECK(r.end_s == 200);
  CHECK(r.finished == 2);
  // The service runs to the end.
  CHECK(r.samples.back().running == 1);
}

TEST_CASE("replay: work on a machine that leaves service is lost and queued again", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4), machine("m2", 4), machine("m1", 4, "r1", 50, false),
                      machine("m1", 4, "r1", 80, true)};
  t.tasks = {task("j1", "a", 2, 0, 100, 4)};
  ReplayReport r = replay(t, every_second());
  CHECK(r.lost == 1);
  CHECK(r.placements == 3);
  // Back at 80, placed again at 80 and rerun for 100 s.
  CHECK(r.end_s == 180);
  bool saw_one_down = false;
  for (const auto& s : r.samples) saw_one_down = saw_one_down || s.machines_up == 1;
  CHECK(saw_one_down);
}

TEST_CASE("replay: --until stops the clock, and what is left is reported", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4)};
  t.tasks = {task("j1", "a", 1, 0, 1000, 4), task("j2", "b", 1, 10, 10, 4)};
  ReplayOptions o = every_second();
  o.until_s = 500;
  ReplayReport r = replay(t, o);
  CHECK(r.finished == 0);
  CHECK(r.pending_at_end == 1);
  CHECK(r.oldest_pending_s == 490);
  CHECK(r.end_s == 500);
  CHECK(r.samples.back().time_s == 500);
}

TEST_CASE("replay: tasks that wait on each other forever are reported, not looped on", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4)};
  t.tasks = {task("j1", "R1_2", 1, 0, 10, 1), task("j1", "R2_1", 1, 0, 10, 1)};
  t.tasks[0].deps = {"R2_1"};
  t.tasks[1].deps = {"R1_2"};
  ReplayReport r = replay(t, every_second());
  CHECK(r.placements == 0);
  CHECK(r.waiting_at_end == 2);
}

TEST_CASE("replay: usage from the trace is utilization, apart from allocation", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 10)};
  t.tasks = {task("j1", "a", 1, 0, 100, 4)};
  t.tasks[0].usage = Resources{1000, kGiB / 2, 0, 0};
  ReplayReport r = replay(t, every_second());
  CHECK(r.samples[1].cpu_alloc == Approx(0.4));
  CHECK(r.samples[1].cpu_used == Approx(0.1));
  CHECK(r.usage_known == Approx(1.0));
}

TEST_CASE("replay: an empty trace replays nothing", "[replay]") {
  Trace t;
  ReplayReport r = replay(t, every_second());
  CHECK(r.placements == 0);
  CHECK(r.samples.empty());
}

TEST_CASE("replay: samples stop with the last event, whatever the step", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4)};
  t.tasks = {task("j1", "a", 1, 0, 95, 1)};
  ReplayOptions o = every_second();
  o.step_s = 3600;
  ReplayReport r = replay(t, o);
  CHECK(r.end_s == 95);
  REQUIRE(r.samples.size() == 2);
  CHECK(r.samples[0].time_s == 0);
  CHECK(r.samples[1].time_s == 95);
}

TEST_CASE("replay: a machine that grows lets queued work in at once", "[replay]") {
  Trace t;
  TraceMachineEvent bigger = machine("m1", 8, "r1", 50);
  t.machine_events = {machine("m1", 4), bigger};
  t.tasks = {task("j1", "a", 1, 0, 1000, 4), task("j2", "b", 1, 10, 10, 4)};
  ReplayReport r = replay(t, every_second());
  CHECK(r.waits_s == std::vector<int64_t>{0, 40});
}

TEST_CASE("replay: per-instance durations and a spread restriction", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 8), machine("m2", 8)};
  TraceTask job = task("j1", "tasks0", 3, 0, 0, 1);
  job.durations = {10, 20, 30};
  job.spread_machines = true;
  t.tasks = {job};
  ReplayReport r = replay(t, every_second());
  // Two machines hold two of the three; the third waits for the first to finish at 10.
  CHECK(r.placements == 3);
  CHECK(r.waits_s == std::vector<int64_t>{0, 0, 10});
}

TEST_CASE("replay: the rebalance controller moves work to fit what waits", "[replay]") {
  Trace t;
  t.machine_events = {machine("m1", 4), machine("m2", 4)};
  // Spread puts one half-machine instance on each machine; the whole-machine one then
  // fits nowhere until one of them moves beside the other.
  t.tasks = {task("j1", "half", 2, 0, 10'000, 2), task("j2", "whole", 1, 10, 100, 4)};
  ReplayReport off = replay(t, every_second());
  CHECK(off.migrations == 0);
  CHECK(off.waits_s.back() == 9'990);  // Only when the halves leave.
  ReplayOptions o = every_second();
  o.rebalance_budget = 1;
  o.rebalance_period_s = 60;
  ReplayReport on = replay(t, o);
  CHECK(on.migrations == 1);
  // Placed at the first period, 60 s in: 50 s after it arrived.
  CHECK(on.waits_s.back() == 50);
}
