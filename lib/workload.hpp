#pragma once
// The rendered workload (`apiVersion: gaia/v1`): the only thing the scheduler reads.
// render/ produces it from Jsonnet and validates it into these types; controllers/
// consume them. Units are fixed here: cpu in millicores, memory/disk in bytes.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/priority.hpp"

namespace gaia {

struct Resources {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t gpu = 0;
  int64_t disk_bytes = 0;
  bool operator==(const Resources&) const = default;
};

// A label selector term: key op values. op: In, NotIn, Exists, DoesNotExist.
struct LabelRequirement {
  std::string key;
  std::string op = "In";
  std::vector<std::string> values;
  bool operator==(const LabelRequirement&) const = default;
};

// Affinity to nodes (by node labels) or to other instances (by instance labels), within
// a topology domain: node, rack, switch or zone.
struct AffinityTerm {
  enum class Target { Node, Instance } target = Target::Node;
  std::vector<LabelRequirement> match;
  std::string topology = "node";  // node | rack | switch | zone
  int weight = 0;                   // Preferred terms only, 1..100.
  bool operator==(const AffinityTerm&) const = default;
};

struct Port {
  std::string name;
  int port = 0;                // Container port; 0 means "allocate from the node".
  std::string protocol = "TCP";
  bool operator==(const Port&) const = default;
};

struct Volume {
  std::string name;
  int64_t size_bytes = 0;
  std::string storage_class = "hdd";  // A storage class of the cluster (lib/cluster.hpp).
  int64_t iops = 0;
  std::string mount_path;
  bool operator==(const Volume&) const = default;
};

struct HealthCheck {
  std::string type;  // tcp | http | exec | "" (none)
  std::string target;  // Port name, path or command.
  int period_s = 10;
  int timeout_s = 1;
  int failure_threshold = 3;
  bool operator==(const HealthCheck&) const = default;
};

struct Role {
  std::string name;
  std::string kind = "service";  // service | batch
  std::string image;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  int replicas = 1;
  // What the scheduler reserves for one instance (the request).
  Resources resources;
  // What one instance may use at most: the Kubernetes limit, the cgroup's cap, and the
  // line above which the run-time controllers kill (memory) or throttle (cpu). Unset
  // unless the role declares `limits` that differ from its requests, so a role made in
  // code and one rendered before limits existed mean "limits equal requests"
  // (docs/spec.md#requests-and-limits).
  std::optional<Resources> limits;
  Priority priority;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> node_selector;
  std::vector<AffinityTerm> required_affinity, preferred_affinity;
  std::vector<AffinityTerm> required_anti_affinity, preferred_anti_affinity;
  std::vector<Port> ports;
  std::vector<Volume> volumes;
  std::string near;  // "<dep alias>/<role>" resolved to "<app>/<role>" at render time.
  std::string required_subnet;    // CIDR, "" for none.
  std::string required_topology;  // e.g. "zone=z1", "" for none.
  int retry_times = 3;
  int backoff_ms = 1000;
  int migrate_times = 3;
  int min_available = 0;
  HealthCheck health;
  // Roles of the same app whose instances must be available before this role's start
  // (`after:`), with the readiness gate a dependent app waits on. Sorted, no repeats.
  std::vector<std::string> after;
  // Between the polite stop signal (SIGTERM; a pod's deletion) and the kill.
  int64_t grace_period_ms = 10'000;

  bool stateful() const { return !volumes.empty(); }
  // Kubernetes' QoS class: Guaranteed when every limit equals its request, else
  // Burstable (a role always requests cpu and memory, so never BestEffort).
  bool burstable() const { return limits && *limits != resources; }
  Resources limit() const { return limits.value_or(resources); }
};

// One config-center or label-center value a render used.
struct ConfigRead {
  std::string kind;  // "config" | "label"
  std::string key;   // "hdfs.replication" or "node/n1/zone".
  nlohmann::json value;
  int64_t revision = 0;
  bool defaulted = false;  // The key was absent and the default was used.
  bool operator==(const ConfigRead&) const = default;
};

struct Workload {
  std::string app;
  std::string version;
  std::string tenant;
  Priority priority;
  std::vector<Role> roles;               // Sorted by name.
  nlohmann::json outputs = nlohmann::json::object();
  nlohmann::json config = nlohmann::json::object();  // The evaluated config.jsonnet.
  std::vector<ConfigRead> reads;
  std::string hash;                      // Content hash of the rendered document.
};

}  // namespace gaia
