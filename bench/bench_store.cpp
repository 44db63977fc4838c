// The state of record on etcd beside SQLite, and what following changes saves.
//
//  submit-e2e-5k-etcd  submit-e2e-5k (bench_submit.cpp) with a real etcd-server started
//                      on 127.0.0.1 in a temp dir instead of the SQLite file: the same
//                      50,000 placements and events, committed through the journal where
//                      a submission exceeds etcd's 128 operations per transaction.
//  idle-50k, idle-50k-etcd
//                      What an idle `gaia controller run` pays per pass to know the
//                      state, at 5,000 nodes and 50,000 instances: a full read (what every
//                      pass did before) against the informer's refresh
//                      (StateOptions::follow_changes) with nothing changed and after one
//                      heartbeat; and the CPU one second of waiting costs, through the
//                      watch versus the earlier poll of the sequence key every 200 ms.
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <thread>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "lib/clock.hpp"
#include "lib/codec.hpp"
#include "lib/state.hpp"
#include "store/etcd_store.hpp"
#include "store/sqlite_store.hpp"
#include "tests/store/etcd_server.hpp"

namespace gaia::bench {

Figures submit_e2e(Store& store, const std::string& describe, const std::filesystem::path& db);

namespace {

constexpr int k_store_nodes = 5000;
constexpr int k_store_instances = 50000;

std::unique_ptr<EtcdStore> open_etcd(const testing::EtcdServer& server) {
  EtcdOptions options;
  options.endpoints = {server.endpoint()};
  options.request_timeout = std::chrono::milliseconds(60000);
  auto store = EtcdStore::open(options);
  if (!store) throw std::runtime_error("cannot open etcd: " + store.error().to_string());
  return std::move(*store);
}

Figures run_submit_e2e_5k_etcd() {
  testing::EtcdServer server;
  auto store = open_etcd(server);
  return submit_e2e(*store, "etcd-server 3.4 (Debian), one member on 127.0.0.1, default limits", {});
}

// 5,000 nodes and 50,000 placed instances, written in commits of 5,000 objects.
void fill(State& state) {
  SystemClock clock;
  auto nodes = make_nodes(k_store_nodes);
  for (size_t from = 0; from < nodes.size(); from += 2500) {
    check(state.update("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (size_t k = from; k < std::min(nodes.size(), from + 2500); ++k) b.put_nodes.push_back(nodes[k]);
      return {};
    }), "writing nodes");
  }
  for (int from = 0; from < k_store_instances; from += 5000) {
    check(state.update("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (int k = from; k < from + 5000; ++k) {
        Instance i;
        i.tenant = "default";
        i.app = fmt::format("app{:03d}", k / 500);
        i.role = "worker";
        i.ordinal = k % 500;
        i.node = nodes[static_cast<size_t>(k) % nodes.size()].name;
        i.state = InstanceState::Running;
        i.request.cpu_millis = 500;
        i.request.memory_bytes = 512LL << 20;
        i.address = fmt::format("10.{}.{}.{}", k / 65536, (k / 256) % 256, k % 256);
        b.put_instances.push_back(std::move(i));
      }
      b.event("Filled", fmt::format("instances {}..{}", from, from + 4999));
      return {};
    }), "writing instances");
  }
}

Figures idle(Store& store, const std::string& describe) {
  SystemClock clock;
  State writer(store, clock);
  double fill_ms = time_ms([&] { fill(writer); });

  // The store's part of a full load: the same ranges, without decoding.
  std::vector<double> raw;
  for (int k = 0; k < 5; ++k)
    raw.push_back(time_ms([&] {
      for (const char* prefix : {"meta/", "nodes/", "tenants/", "apps/", "status/apps/", "instances/", "settings/",
                                 "heartbeats/"})
        if (!store.read(RangeRequest::prefix(prefix))) throw std::runtime_error("raw read failed");
    }));

  State plain(store, clock);
  std::vector<double> full;
  for (int k = 0; k < 5; ++k) full.push_back(time_ms([&] { check(plain.load(), "full load"); }));

  StateOptions follow;
  follow.follow_changes = true;
  State cached(store, clock, follow);
  double first_ms = time_ms([&] { check(cached.load(), "first load"); });
  std::vector<double> quiet, after_beat;
  for (int k = 0; k < 20; ++k) quiet.push_back(time_ms([&] { check(cached.load(), "refresh"); }));
  for (int k = 0; k < 10; ++k) {
    check(writer.write_heartbeats({"n00000"}, "bench"), "heartbeat");
    after_beat.push_back(time_ms([&] { check(cached.load(), "refresh after a beat"); }));
  }
  auto check_equal = check(plain.load(), "full load");
  auto refreshed = check(cached.load(), "refresh");
  if (check_equal.snapshot.instances.size() != refreshed.snapshot.instances.size() ||
      check_equal.revision != refreshed.revision)
    throw std::runtime_error("the refreshed state differs from a full read");

  // One second of idle waiting: through the watch, and as the loops polled before.
  double before = cpu_ms();
  for (int k = 0; k < 4; ++k) check(cached.wait_for_change("events/", std::chrono::milliseconds(250)), "watch");
  double watch_cpu = cpu_ms() - before;
  before = cpu_ms();
  for (int k = 0; k < 5; ++k) {
    check(plain.last_seq(), "poll");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  double poll_cpu = cpu_ms() - before;

  Figures out;
  out["store"] = describe;
  out["nodes"] = k_store_nodes;
  out["instances"] = k_store_instances;
  out["fill_ms"] = round3(fill_ms);
  out["store_read_p50_ms"] = round3(percentile(raw, 50));
  out["full_load_p50_ms"] = round3(percentile(full, 50));
  out["informer_first_load_ms"] = round3(first_ms);
  out["informer_idle_refresh_p50_ms"] = round3(percentile(quiet, 50));
  out["informer_refresh_after_heartbeat_p50_ms"] = round3(percentile(after_beat, 50));
  out["idle_wait_cpu_ms_per_s_watch"] = round3(watch_cpu);
  out["idle_wait_cpu_ms_per_s_seq_poll"] = round3(poll_cpu);
  out["cpu_ms"] = round3(cpu_ms());
  return out;
}

Figures run_idle_sqlite() {
  TempDir dir("gaia-bench-idle");
  SqliteStoreOptions options;
  auto store = SqliteStore::open(dir.path() / "store.db", options);
  if (!store) throw std::runtime_error("cannot open the store: " + store.error().to_string());
  return idle(**store, "SQLite, WAL, synchronous FULL (defaults)");
}

Figures run_idle_etcd() {
  testing::EtcdServer server;
  auto store = open_etcd(server);
  return idle(*store, "etcd-server 3.4 (Debian), one member on 127.0.0.1");
}

const Registration k_submit_etcd{"submit-e2e-5k-etcd",
                                 "submit-e2e-5k against a real etcd-server started on 127.0.0.1 (journaled commits)",
                                 &run_submit_e2e_5k_etcd};
const Registration k_idle_sqlite{"idle-50k",
                                 "an idle controller pass's read of 50,000 instances: full load vs informer refresh, "
                                 "watch vs poll (SQLite)",
                                 &run_idle_sqlite};
const Registration k_idle_etcd{"idle-50k-etcd", "idle-50k against a real etcd-server started on 127.0.0.1",
                               &run_idle_etcd};

}  // namespace
}  // namespace gaia::bench
