#pragma once
// JSON encoding of the core types, as they are kept in the store. Missing fields decode
// to their defaults, so records written by an older gaia still load after a field is
// added; unknown fields are ignored for the same reason.

#include <nlohmann/json.hpp>

#include "lib/cluster.hpp"
#include "lib/workload.hpp"

namespace gaia {

void to_json(nlohmann::json& j, const Priority& p);
void from_json(const nlohmann::json& j, Priority& p);

NLOHMANN_JSON_SERIALIZE_ENUM(NodeState, {{NodeState::Ready, "Ready"},
                                         {NodeState::Cordoned, "Cordoned"},
                                         {NodeState::Down, "Down"}})
NLOHMANN_JSON_SERIALIZE_ENUM(InstanceState, {{InstanceState::Pending, "Pending"},
                                             {InstanceState::Placed, "Placed"},
                                             {InstanceState::Running, "Running"},
                                             {InstanceState::Failed, "Failed"},
                                             {InstanceState::Succeeded, "Succeeded"},
                                             {InstanceState::Terminating, "Terminating"}})
NLOHMANN_JSON_SERIALIZE_ENUM(AffinityTerm::Target, {{AffinityTerm::Target::Node, "node"},
                                                    {AffinityTerm::Target::Instance, "instance"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Resources, cpu_millis, memory_bytes, gpu, disk_bytes)

}  // namespace gaia

// Role::limits: null when unset. nlohmann 3.11.2 (Debian bookworm) has no std::optional
// support of its own.
template <>
struct nlohmann::adl_serializer<std::optional<gaia::Resources>> {
  static void to_json(json& j, const std::optional<gaia::Resources>& o) {
    if (o) j = *o;
    else j = nullptr;
  }
  static void from_json(const json& j, std::optional<gaia::Resources>& o) {
    if (j.is_null()) o.reset();
    else o = j.get<gaia::Resources>();
  }
};

namespace gaia {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LabelRequirement, key, op, values)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AffinityTerm, target, match, topology, weight)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Port, name, port, protocol)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Volume, name, size_bytes, storage_class, iops, mount_path)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HealthCheck, type, target, period_s, timeout_s, failure_threshold)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Role, name, kind, image, command, env, replicas, resources, priority,
                                                labels, node_selector, required_affinity, preferred_affinity,
                                                required_anti_affinity, preferred_anti_affinity, ports, volumes, near,
                                                required_subnet, required_topology, retry_times, backoff_ms,
                                                migrate_times, min_available, health, grace_period_ms, limits, after)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ConfigRead, kind, key, value, revision, defaulted)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Workload, app, version, tenant, priority, roles, outputs, config, reads,
                                                hash)
NLOHMANN_JSON_SERIALIZE_ENUM(StorageKind, {{StorageKind::Local, "local"}, {StorageKind::Claim, "claim"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StorageClass, name, kind, description, capacity_bytes, node_selector)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VolumeGroup, name, storage_class, size_bytes, iops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(KeptVolume, tenant, app, role, ordinal, volume, group, size_bytes, iops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Node, name, address, instance_subnet, capacity, port_min, port_max,
                                                labels, volume_groups, kept_volumes, cached_images, state, zone, rack,
                                                switch_, draining, down_reason, cordon_reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Quota, cpu_millis, memory_bytes, gpu, instances)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Tenant, name, quota, pool_selector)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VolumeBinding, volume, node, group, size_bytes, iops)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SchedulerProfile, strategy, w_allocation, w_balance, w_locality,
                                                w_image, w_affinity, w_spread, w_scarce,
                                                percentage_of_nodes_to_score)

// Instance has fields added by the scheduler work (reservation); encoded by hand in
// codec.cpp so this header does not have to list them twice.
void to_json(nlohmann::json& j, const Instance& i);
void from_json(const nlohmann::json& j, Instance& i);

}  // namespace gaia
