// Reading Alibaba's cluster-trace-v2018: rows become machines and tasks, DAG names become
// dependencies, malformed rows are errors with their file and line, and rows that cannot
// be replayed are counted, not silently dropped.
#include <catch2/catch.hpp>

#include "controllers/trace.hpp"

using namespace gaia;
using namespace gaia::sim;

namespace {

constexpr int64_t kGiB = 1024LL * 1024 * 1024;

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
  CHECK(m1.capacity.memory_bytes == 512 * kGiB);
  CHECK(t->machine_events[1].capacity.memory_bytes == 256 * kGiB);
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
  CHECK(map.request.memory_bytes == static_cast<int64_t>(0.015 * 512 * kGiB));
  CHECK(map.band == Band::Nonprod);
  CHECK(t->tasks[1].deps == std::vector<std::string>{"M1"});
  CHECK(t->skipped.empty());
}

TEST_CASE("trace: the memory unit scales every memory figure", "[trace]") {
  auto t = parse_alibaba_v2018(minimal_trace(), "tr", AlibabaOptions{100 * kGiB});
  REQUIRE(t.has_value());
  CHECK(t->machine_events[0].capacity.memory_bytes == 100 * kGiB);
  CHECK(t->tasks[1].request.memory_bytes == static_cast<int64_t>(0.005 * 100 * kGiB));
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
  CHECK(t.error()[0].message.find("must be numbers") != std::string::npos);
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
  CHECK(t->skipped.at("batch_task.csv: dependency not in the trace (ignored)") == 1);
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
  CHECK(t->tasks[0].usage->memory_bytes == static_cast<int64_t>(0.0075 * 512 * kGiB));
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
