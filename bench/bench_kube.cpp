// The Kubernetes backend through an API server: pods created, bound (pods/binding) and
// announced (a Scheduled event) per second, at 1k and 5k nodes, with the backend's own
// parallelism. Against the stand-in on 127.0.0.1, or a real cluster when
// GAIA_TEST_KUBECONFIG names a kubeconfig (standin/test_cluster.hpp). The nodes are
// registered first (not timed); the pods are spread round-robin, since this measures the
// API path; the in-process scheduler's own rate is the schedule-basic-5k case.
#include <fmt/format.h>

#include "bench/bench_util.hpp"
#include "kube/kube_backend.hpp"
#include "standin/test_cluster.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::bench {

namespace {

Figures bind_case(int nodes, int pods, bool events) {
  TempDir dir("gaia-bench-kube");
  standin::TestCluster cluster(dir.path());
  cluster.kubelet().stop();  // Binding is measured, not the kubelet's status writes.
  Timer setup;
  cluster.add_nodes(nodes);
  double setup_ms = setup.elapsed_ms();
  kube::KubeBackendOptions o;
  o.namespace_name = cluster.namespace_name();
  o.owner = "gaia-bench";
  o.post_events = events;
  kube::KubeBackend backend(cluster.shared_client(), o);
  std::vector<StartSpec> specs;
  for (int i = 0; i < pods; ++i) {
    StartSpec s;
    s.instance.tenant = "default";
    s.instance.app = "bench";
    s.instance.role = "web";
    s.instance.ordinal = i;
    s.instance.generation = 1;
    s.instance.node = cluster.node_name(i % nodes);
    s.role.name = "web";
    s.role.image = "nginx:1.25";
    s.role.resources.cpu_millis = 100;
    s.role.resources.memory_bytes = 128 << 20;
    s.app_version = "1.0.0";
    specs.push_back(std::move(s));
  }
  Timer t;
  auto started = backend.start(specs, 0);
  double ms = t.elapsed_ms();
  if (!started) throw std::runtime_error(started.error().message);
  int failed = 0;
  for (const auto& r : *started) failed += r.error ? 1 : 0;
  if (failed) throw std::runtime_error(fmt::format("{} of {} starts failed", failed, pods));
  Figures f;
  f["api_server"] = cluster.real() ? "real (GAIA_TEST_KUBECONFIG)" : "stand-in";
  f["nodes"] = nodes;
  f["pods"] = pods;
  f["events"] = events;
  f["node_setup_ms"] = round3(setup_ms);
  f["bind_ms"] = round3(ms);
  f["pods_bound_per_s"] = round3(pods * 1000.0 / ms);
  if (auto* s = cluster.server()) {
    auto counts = s->request_counts();
    f["requests"] = counts["POST pods"] + counts["POST pods/binding"] + counts["POST events"];
  }
  return f;
}

Registration kube_1k("kube-bind-1k", "pods created and bound through the stand-in API server, 1,000 nodes, 2,000 pods",
                     [] { return bind_case(1000, 2000, true); });
Registration kube_5k("kube-bind-5k", "pods created and bound through the stand-in API server, 5,000 nodes, 5,000 pods",
                     [] { return bind_case(5000, 5000, true); });
Registration kube_5k_quiet("kube-bind-5k-noevents", "as kube-bind-5k without posting a Scheduled event per pod",
                           [] { return bind_case(5000, 5000, false); });

}  // namespace

}  // namespace gaia::bench
