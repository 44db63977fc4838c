// Reading Alibaba's cluster-trace-v2018: rows become machines and tasks, DAG names become
// dependencies, malformed rows are errors with their file and line, and rows that cannot
// be replayed are counted, not silently dropped.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sstream>

#include "controllers/trace.hpp"

using namespace gaia;
using namespace gaia::sim;

namespace {

constexpr int64_t kTraceGiB = 1024LL * 1024 * 1024;

std::map<std::string, std::string> minimal_trace() {
  return {{"machine_meta.csv", "m_1,0,17,A,96,100,USING\nm_2,0,17,B,64,50,USING\n"},
          {"batch_task.csv", "M1,4,j_1,1,Terminated,100,400,100,1.5\nR2_1,2,j_1,1,Terminated,410,500,50,0.5\n"}};
}

}  // namespace

TEST_CASE("trace: DAG names give the task's id and the tasks before it", "[trace]") {
  CHECK(parse_dag_name("M1").id == "1");
  CHECK(parse_dag_name("M1").deps.empty());
  auto r = parse_dag_name("R2_1");
  CHECK(r.id == "2");
  CHECK(r.deps == std::vector<std::string>{"1"});
  auto j = parse_dag_name("J12_10_11");
  CHECK(j.id == "12");
  CHECK(j.deps == std::vector<std::string>{"10", "11"});
  CHECK(parse_dag_name("task_Nzg3ODAwNDgzMTAzNTc2NjUyMg==").id.empty());
  CHECK(parse_dag_name("MergeTask").id.empty());
  CHECK(parse_dag_name("R2_").id.empty());
  CHECK(parse_dag_name("12").id.empty());
}

TEST_CASE("trace: machines and tasks in gaia's units", "[trace]") {
  auto t = parse_alibaba_v2018(minimal_trace(), "tr");
  REQUIRE(t.has_value());
  CHECK(t->format == "alibaba-v2018");
  REQUIRE(t->machine_events.size() == 2);
  const auto& m1 = t->machine_events[0];
  CHECK(m1.machine == "m_1");
  CHECK(m1.up);
  CHECK(m1.capacity.cpu_millis == 96'000);
  CHECK(m1.capacity.memory_bytes == 512 * kTraceGiB);
  CHECK(t->machine_events[1].capacity.memory_bytes == 256 * kTraceGiB);
  CHECK(m1.zone == "fd17");
  CHECK(m1.rack == "fd17-A");
  REQUIRE(t->tasks.size() == 2);
  const auto& map = t->tasks[0];
  CHECK(map.name == "M1");
  CHECK(map.job == "j_1");
  CHECK(map.instances == 4);
  CHECK(map.start_s == 100);
  CHECK(map.duration_s == 300);
  CHECK(map.request.cpu_millis == 1000);  // 100 is one core.
  CHECK(map.request.memory_bytes == static_cast<int64_t>(0.015 * 512 * kTraceGiB));
  CHECK(map.band == Band::Nonprod);
  CHECK(t->tasks[1].deps == std::vector<std::string>{"M1"});
  CHECK(t->skipped.empty());
}

TEST_CASE("trace: the memory unit scales every memory figure", "[trace]") {
  auto t = parse_alibaba_v2018(minimal_trace(), "tr", AlibabaOptions{100 * kTraceGiB});
  REQUIRE(t.has_value());
  CHECK(t->machine_events[0].capacity.memory_bytes == 100 * kTraceGiB);
  CHECK(t->tasks[1].request.memory_bytes == static_cast<int64_t>(0.005 * 100 * kTraceGiB));
}

TEST_CASE("trace: a header row and blank lines and CRLF endings are accepted", "[trace]") {
  auto files = minimal_trace();
  files["machine_meta.csv"] = "machine_id,time_stamp,failure_domain_1,failure_domain_2,cpu_num,mem_size,status\r\n"
                              "m_1,0,17,A,96,100,USING\r\n\r\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  CHECK(t->machine_events.size() == 1);
}

TEST_CASE("trace: malformed rows are errors with file and line, all of them", "[trace]") {
  auto files = minimal_trace();
  files["machine_meta.csv"] = "m_1,0,17,A,96,100,USING\nm_2,0,17,B,lots,100,USING\nm_3,0,17\n";
  files["batch_task.csv"] = "M1,4,j_1,1,Terminated,100,400,100,1.5\nR2_1,two,j_1,1,Terminated,410,500,50,0.5\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE_FALSE(t.has_value());
  REQUIRE(t.error().size() == 3);
  CHECK(t.error()[0].location.to_string() == "tr/machine_meta.csv:2");
  CHECK(t.error()[0].message.find("whole number 0..100000") != std::string::npos);
  CHECK(t.error()[1].location.to_string() == "tr/machine_meta.csv:3");
  CHECK(t.error()[1].message.find("expected 7 fields") != std::string::npos);
  CHECK(t.error()[2].location.to_string() == "tr/batch_task.csv:2");
}

TEST_CASE("trace: a flood of bad rows is cut short with a count", "[trace]") {
  auto files = minimal_trace();
  std::string bad;
  for (int i = 0; i < 50; ++i) bad += "x\n";
  files["batch_task.csv"] = bad;
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE_FALSE(t.has_value());
  REQUIRE(t.error().size() == 21);
  CHECK(t.error().back().message == "30 more malformed rows not shown");
}

TEST_CASE("trace: the required files are named when missing", "[trace]") {
  auto t = parse_alibaba_v2018({{"container_meta.csv", ""}}, "tr");
  REQUIRE_FALSE(t.has_value());
  REQUIRE(t.error().size() == 2);
  CHECK(t.error()[0].message == "the trace has no machine_meta.csv");
  CHECK(t.error()[1].message == "the trace has no batch_task.csv");
  CHECK(t.error()[0].hint.find("cluster-trace-v2018") != std::string::npos);

  auto no_machines = minimal_trace();
  no_machines["machine_meta.csv"] = "";
  auto e = parse_alibaba_v2018(no_machines, "tr");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error()[0].message == "the trace has no usable machine rows");
}

TEST_CASE("trace: rows that cannot be replayed are counted by reason", "[trace]") {
  auto files = minimal_trace();
  files["batch_task.csv"] += "M1,3,j_2,1,Running,500,0,100,0.5\n"        // No end yet.
                             "task_x,2,j_3,1,Terminated,500,600,,\n"     // No plan.
                             "M1,0,j_4,1,Terminated,500,600,100,0.5\n"   // No instances.
                             "M1,4,j_1,1,Terminated,100,400,100,1.5\n"   // Repeated.
                             "R3_9,1,j_1,1,Terminated,500,600,100,0.5\n";  // Task 9 is not there.
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  CHECK(t->tasks.size() == 3);
  CHECK(t->skipped.at("batch_task.csv: end_time not after start_time") == 1);
  CHECK(t->skipped.at("batch_task.csv: no plan_cpu or plan_mem") == 1);
  CHECK(t->skipped.at("batch_task.csv: no instances") == 1);
  CHECK(t->skipped.at("batch_task.csv: repeated task (first row kept)") == 1);
  CHECK(t->skipped.at("batch_task.csv: dependencies on tasks not in the trace (the task is replayed without them)") == 1);
}

TEST_CASE("trace: machines leave and return service by status", "[trace]") {
  auto files = minimal_trace();
  files["machine_meta.csv"] += "m_1,500,17,A,96,100,OFFLINE\nm_1,900,17,A,96,100,USING\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  REQUIRE(t->machine_events.size() == 4);
  CHECK(t->machine_events[2].time_s == 500);
  CHECK_FALSE(t->machine_events[2].up);
  CHECK(t->machine_events[3].up);
}

TEST_CASE("trace: containers are prod services grouped by unit, time and request", "[trace]") {
  auto files = minimal_trace();
  files["container_meta.csv"] =
      "c_1,m_1,0,app_5,allocated,400,400,1.56\n"
      "c_1,m_1,5,app_5,started,400,400,1.56\n"  // A status change of c_1, not a new container.
      "c_2,m_2,0,app_5,started,400,400,1.56\n"
      "c_3,m_2,7200,app_5,started,400,400,1.56\n"
      "c_4,m_1,0,app_6,started,800,800,3.13\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  std::vector<const TraceTask*> online;
  for (const auto& task : t->tasks)
    if (task.band == Band::Prod) online.push_back(&task);
  REQUIRE(online.size() == 3);
  CHECK(online[0]->job == "app_5");
  CHECK(online[0]->instances == 2);
  CHECK(online[0]->duration_s == 0);
  CHECK(online[0]->request.cpu_millis == 4000);
  CHECK(online[1]->job == "app_6");
  CHECK(online[2]->job == "app_5");
  CHECK(online[2]->start_s == 7200);
}

TEST_CASE("trace: batch_instance.csv gives each task its mean usage", "[trace]") {
  auto files = minimal_trace();
  files["batch_instance.csv"] =
      "i_1,M1,j_1,1,Terminated,100,400,m_1,1,1,60,80,1.0,1.2\n"
      "i_2,M1,j_1,1,Terminated,100,400,m_2,1,1,80,90,0.5,0.6\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  REQUIRE(t->tasks[0].usage.has_value());
  CHECK(t->tasks[0].usage->cpu_millis == 700);
  CHECK(t->tasks[0].usage->memory_bytes == static_cast<int64_t>(0.0075 * 512 * kTraceGiB));
  CHECK_FALSE(t->tasks[1].usage.has_value());
}

TEST_CASE("trace: rows after the until time are counted, not kept", "[trace]") {
  auto files = minimal_trace();
  files["machine_meta.csv"] += "m_1,500,17,A,96,100,OFFLINE\n";
  AlibabaOptions o;
  o.until_s = 300;
  auto t = parse_alibaba_v2018(files, "tr", o);
  REQUIRE(t.has_value());
  CHECK(t->machine_events.size() == 2);
  CHECK(t->tasks.size() == 1);
  CHECK(t->skipped.at("machine_meta.csv: after --until") == 1);
  CHECK(t->skipped.at("batch_task.csv: after --until") == 1);
}

TEST_CASE("trace: numbers outside the schema's ranges are malformed rows", "[trace]") {
  auto files = minimal_trace();
  files["batch_task.csv"] = "M1,4,j_1,1,Terminated,1e300,400,100,1.5\n"        // A time no replay can hold.
                            "M2,4,j_1,1,Terminated,100,400,1e300,1.5\n"        // A request no machine has.
                            "M3,1.5,j_1,1,Terminated,100,400,100,1.5\n"        // Half an instance.
                            "M4,4,j_1,1,Terminated,10,10.5,100,1.5\n"          // Half a second.
                            "M5,4,j_1,1,Terminated,-5,400,100,1.5\n"           // Before the trace.
                            "M6,4,j_1,1,Terminated,100,400,100,250\n";         // Memory past the largest machine.
  files["machine_meta.csv"] = "m_1,0,17,A,1e300,100,USING\nm_2,0,17,A,96,100,USING\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE_FALSE(t.has_value());
  REQUIRE(t.error().size() == 7);
  CHECK(t.error()[0].location.to_string() == "tr/machine_meta.csv:1");
  for (int i = 1; i <= 6; ++i) CHECK(t.error()[static_cast<size_t>(i)].location.to_string() == fmt::format("tr/batch_task.csv:{}", i));
  CHECK(t.error()[1].message.find("whole seconds 0..1e9") != std::string::npos);
}

TEST_CASE("trace: a start time of 0 is the trace's unknown", "[trace]") {
  auto files = minimal_trace();
  files["batch_task.csv"] += "M1,4,j_2,1,Terminated,0,400,100,1.5\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  CHECK(t->skipped.at("batch_task.csv: start_time unknown (0)") == 1);
}

TEST_CASE("trace: tasks that wait on each other are left out with those after them", "[trace]") {
  auto files = minimal_trace();
  files["batch_task.csv"] += "M1_2,1,j_2,1,Terminated,100,200,100,1\n"
                             "M2_1,1,j_2,1,Terminated,100,200,100,1\n"
                             "R3_2,1,j_2,1,Terminated,300,400,100,1\n"
                             "M4,1,j_2,1,Terminated,100,200,100,1\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  CHECK(t->skipped.at("batch_task.csv: in a DAG cycle or after one (never able to start)") == 3);
  int j2 = 0;
  for (const auto& task : t->tasks) j2 += task.job == "j_2" ? 1 : 0;
  CHECK(j2 == 1);
}

TEST_CASE("trace: a byte order mark and the trace's other header names are read", "[trace]") {
  auto files = minimal_trace();
  files["machine_meta.csv"] = "\xEF\xBB\xBFmachine_id,time_stamp,failure_domain_1,failure_domain_2,cpu_num,mem_size,status\n"
                              "m_1,0,17,A,96,100,USING\n";
  files["batch_instance.csv"] = "inst_name,task_name,job_name,task_type,status,start_time,end_time,machine_id,seq_no,"
                                "total_seq_no,cpu_avg,cpu_max,mem_avg,mem_max\n"
                                "i_1,M1,j_1,1,Terminated,100,400,m_1,1,1,60,80,1.0,1.2\n"
                                "i_9,M7,j_9,1,Terminated,100,400,m_1,1,1,60,80,1.0,1.2\n";
  auto t = parse_alibaba_v2018(files, "tr");
  REQUIRE(t.has_value());
  CHECK(t->machine_events.size() == 1);
  CHECK(t->tasks[0].usage.has_value());
  CHECK(t->skipped.at("batch_instance.csv: task not replayed") == 1);
}

namespace {

Result<Trace> google(const std::string& machines, const std::string& tasks, GoogleOptions o = {}) {
  std::istringstream m(machines), t(tasks);
  return parse_google_2011({{"g/machine_events.csv", &m}}, {{"g/task_events.csv", &t}}, o);
}

}  // namespace

TEST_CASE("trace: Google's machine and task events become machines and roles", "[trace]") {
  std::string machines = "0,5,0,p,0.5,0.25\n0,6,0,p,1,1\n600000000,5,1,,,\n900000000,5,0,p,0.5,0.25\n";
  std::string tasks =
      "0,,77,0,,0,u,2,9,0.125,0.0625,0,1\n"  // Job 77: two tasks, prod (priority 9), apart.
      "0,,77,1,,0,u,2,9,0.125,0.0625,0,1\n"
      "700000000,,77,0,5,1,u,2,9,,,,\n"    // Scheduled at 700 s...
      "1000000000,,77,0,5,4,u,2,9,,,,\n"   // ...finished at 1000 s: runs 300 s.
      "700000000,,77,1,6,1,u,2,9,,,,\n"    // Still running at the end: a service.
      "800000000,,88,0,,0,u,0,0,0.5,0.5,0,0\n"  // Never scheduled.
      "800000000,,99,0,,0,u,0,2,0.25,0.125,0,0\n"
      "801000000,,99,0,6,1,u,0,2,,,,\n"
      "802000000,,99,0,6,2,u,0,2,,,,\n"    // Evicted, then scheduled again...
      "850000000,,99,0,6,1,u,0,2,,,,\n"
      "860000000,,99,0,6,5,u,0,2,,,,\n";   // ...and killed: its last run is 10 s.
  auto t = google(machines, tasks);
  REQUIRE(t.has_value());
  CHECK(t->format == "google-2011");
  REQUIRE(t->machine_events.size() == 4);
  CHECK(t->machine_events[0].machine == "g5");
  CHECK(t->machine_events[0].capacity.cpu_millis == 32'000);
  CHECK(t->machine_events[0].capacity.memory_bytes == 128 * kTraceGiB);
  CHECK_FALSE(t->machine_events[2].up);
  CHECK(t->machine_events[2].time_s == 600);
  CHECK(t->machine_events[3].up);
  REQUIRE(t->tasks.size() == 2);
  const TraceTask& prod = t->tasks[0];
  CHECK(prod.job == "job77");
  CHECK(prod.band == Band::Prod);
  CHECK(prod.instances == 2);
  CHECK(prod.durations == std::vector<int64_t>{300, 0});
  CHECK(prod.spread_machines);
  CHECK(prod.request.cpu_millis == 8000);
  CHECK(prod.request.memory_bytes == 32 * kTraceGiB);
  const TraceTask& batch = t->tasks[1];
  CHECK(batch.band == Band::Nonprod);
  CHECK(batch.start_s == 800);
  CHECK(batch.durations == std::vector<int64_t>{10});
  CHECK(t->skipped.at("task_events: never scheduled in the trace") == 1);
}

TEST_CASE("trace: Google rows outside the schema are errors with their part and line", "[trace]") {
  auto t = google("0,5,0,p,0.5,0.25\n0,5,7,p,0.5,0.25\n",
                  "0,,77,0,,0,u,2,12,0.1,0.1,0,0\n0,,77,0,,0,u,2,9,0.1\n0,,77,0,,0,u,2,9,5,0.1,0,0\n");
  REQUIRE_FALSE(t.has_value());
  REQUIRE(t.error().size() == 4);
  CHECK(t.error()[0].location.to_string() == "g/machine_events.csv:2");
  CHECK(t.error()[1].location.to_string() == "g/task_events.csv:1");
  CHECK(t.error()[2].message.find("expected 13 fields") != std::string::npos);
  CHECK(t.error()[3].location.to_string() == "g/task_events.csv:3");
  auto none = parse_google_2011({}, {});
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error()[0].hint.find("machine_events and task_events") != std::string::npos);
}
