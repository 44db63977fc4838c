#pragma once
// An hdfs-like app built from JSON literals (no Jsonnet): a namenode service with ports,
// datanodes with ssd volumes and anti-affinity, and a batch role with a gpu. Shared by
// the workload, document and Kubernetes tests.

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <limits>
#include <regex>
#include <string>

#include "render/workload.hpp"
#include "spec/app_spec.hpp"

namespace gaia::test {

inline spec::AppSpec hdfs_spec() {
  spec::AppSpec s;
  s.name = "hdfs";
  s.version = *semver::parse_version("3.3.4");
  s.priority = *parse_priority("prod:200");
  spec::Dependency zk;
  zk.name = "zookeeper";
  zk.alias = "zk";
  zk.imports = {"quorum"};
  s.dependencies.push_back(zk);
  spec::Dependency metrics;
  metrics.name = "metrics-store";
  metrics.alias = "metrics";
  s.dependencies.push_back(metrics);
  s.outputs = {"namenode_uri", "webhdfs"};
  s.yaml_file = "apps/hdfs/app.yaml";
  return s;
}

inline nlohmann::json hdfs_main() {
  return nlohmann::json::parse(R"({
    "roles": {
      "namenode": {
        "image": "apache/hadoop:3.3.4",
        "command": ["hdfs", "namenode"],
        "env": { "HADOOP_HEAPSIZE": "4096", "CLUSTER_ID": "on" },
        "resources": { "cpu": "2", "memory": "8Gi" },
        "priority": "prod:300",
        "labels": { "tier": "master" },
        "node_selector": { "disktype": "ssd", "zone": "z1" },
        "affinity": {
          "required": [ { "target": "node", "match": [ { "key": "zone", "op": "In", "values": ["z2", "z1"] } ] } ]
        },
        "ports": [ { "name": "rpc", "port": 8020 }, { "name": "http", "port": 9870, "protocol": "TCP" } ],
        "near": "zk/server",
        "migration": { "migrate_times": 1, "min_available": 1 },
        "health": { "type": "tcp", "target": "rpc", "period": "10s", "timeout": "2s" }
      },
      "datanode": {
        "image": "apache/hadoop:3.3.4",
        "command": ["hdfs", "datanode"],
        "replicas": 3,
        "resources": { "cpu": 4, "memory": 17179869184, "disk": "20Gi" },
        "volumes": [
          { "name": "data", "size": "100Gi", "class": "ssd", "iops": 3000, "mount": "/data" },
          { "name": "logs", "size": "10Gi" }
        ],
        "ports": [ { "name": "data", "port": 9866 }, { "name": "http", "port": 9864 } ],
        "anti_affinity": {
          "required": [ { "match_labels": { "app": "hdfs", "role": "datanode" }, "topology": "node" } ],
          "preferred": [ { "match_labels": { "app": "hdfs", "role": "datanode" }, "topology": "rack", "weight": 50 } ]
        },
        "restart": { "retry_times": 5, "backoff": "2s" },
        "network": { "subnet": "10.1.0.0/16" },
        "health": { "type": "http", "target": "http/healthz", "period": "15s", "failure_threshold": 5 }
      },
      "balancer": {
        "kind": "batch",
        "image": "apache/hadoop:3.3.4",
        "command": ["hdfs", "balancer", "-threshold", "10"],
        "replicas": 2,
        "resources": { "cpu": 0.5, "memory": "2Gi", "gpu": 1 },
        "priority": "nonprod:50:non-preemptible",
        "restart": { "retry_times": 2, "backoff": "500ms" },
        "network": { "topology": "zone=z1" },
        "anti_affinity": {
          "required": [ { "target": "node", "match": [ { "key": "gpu-model", "op": "In", "values": ["k80"] } ] } ]
        },
        "volumes": [ { "name": "scratch", "size": "50Gi", "class": "hdd" } ]
      }
    },
    "outputs": {
      "namenode_uri": "hdfs://namenode.hdfs.default.gaia:8020",
      "webhdfs": { "host": "namenode.hdfs.default.gaia", "port": 9870 }
    }
  })");
}

inline render::RawRender hdfs_raw() {
  render::RawRender raw;
  raw.config = nlohmann::json::parse(R"({
    "hdfs": { "replication": 3, "heap": "4g", "block_size": 134217728 },
    "yes": "no", "ratio": 0.75, "motd": "line one\nline two\n", "empty": ""
  })");
  raw.main = hdfs_main();
  raw.reads.push_back({"label", "node/n1/zone", "z1", 7, false});
  raw.reads.push_back({"config", "hdfs.replication", 3, 0, true});
  return raw;
}

// Converts YAML read back by yaml-cpp into JSON with the YAML 1.2 core schema: quoted
// and block scalars are strings; plain ones are resolved to null, bool, int, float or
// string. A plain scalar that YAML 1.1 readers (kubectl's go-yaml, PyYAML) would read as
// a boolean becomes the marker "<ambiguous:...>", so a comparison fails on it.
inline nlohmann::json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return nullptr;
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : n) out.push_back(yaml_to_json(item));
      return out;
    }
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : n) out[kv.first.Scalar()] = yaml_to_json(kv.second);
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "?") return s;
      static const std::regex null_re("null|Null|NULL|~|");
      static const std::regex true_re("true|True|TRUE"), false_re("false|False|FALSE");
      static const std::regex yaml11_bool("y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF");
      static const std::regex int_re("[-+]?[0-9]+");
      static const std::regex float_re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
      if (std::regex_match(s, null_re)) return nullptr;
      if (std::regex_match(s, true_re)) return true;
      if (std::regex_match(s, false_re)) return false;
      if (std::regex_match(s, yaml11_bool)) return "<ambiguous:" + s + ">";
      if (std::regex_match(s, int_re)) return nlohmann::json::parse(s[0] == '+' ? s.substr(1) : s);
      if (std::regex_match(s, float_re)) return std::stod(s);
      if (s == ".inf" || s == "+.inf") return std::numeric_limits<double>::infinity();
      return s;
    }
    default: return nullptr;
  }
}

}  // namespace gaia::test
