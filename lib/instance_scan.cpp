#include "lib/instance_scan.hpp"

#include <string>

#include "lib/json_scan.hpp"
#include "lib/priority.hpp"

namespace gaia {

bool scan_resources(JsonScanner& s, Resources& r) {
  r = Resources{};
  return s.object([&](std::string_view key) {
    if (key == "cpu_millis") return s.integer(r.cpu_millis);
    if (key == "memory_bytes") return s.integer(r.memory_bytes);
    if (key == "gpu") return s.integer(r.gpu);
    if (key == "disk_bytes") return s.integer(r.disk_bytes);
    return false;
  });
}

namespace {

bool scan_volume(JsonScanner& s, VolumeBinding& v) {
  v = VolumeBinding{};
  return s.object([&](std::string_view key) {
    if (key == "volume") return s.string(v.volume);
    if (key == "node") return s.string(v.node);
    if (key == "group") return s.string(v.group);
    if (key == "size_bytes") return s.integer(v.size_bytes);
    if (key == "iops") return s.integer(v.iops);
    return false;
  });
}

// The names NLOHMANN_JSON_SERIALIZE_ENUM(InstanceState) writes. nlohmann reads an
// unknown name as the first state; that (corrupt) case goes the slow way.
bool scan_state(JsonScanner& s, InstanceState& state) {
  std::string_view name;
  if (!s.string(name)) return false;
  for (auto st : {InstanceState::Pending, InstanceState::Placed, InstanceState::Running, InstanceState::Failed,
                  InstanceState::Succeeded, InstanceState::Terminating})
    if (instance_state_name(st) == name) {
      state = st;
      return true;
    }
  return false;
}

bool scan_optional_resources(JsonScanner& s, std::optional<Resources>& out) {
  Resources r;
  if (!scan_resources(s, r)) return false;
  out = r;
  return true;
}

bool scan_member(JsonScanner& s, std::string_view key, Instance& i, LabelPool& pool, LabelPool::Pairs& pairs) {
  switch (key.empty() ? '\0' : key.front()) {
    case 'a':
      if (key == "app") return s.string(i.app);
      if (key == "address") return s.string(i.address);
      break;
    case 'e':
      if (key == "exit_code") return s.integer(i.exit_code);
      break;
    case 'f':
      if (key == "failure") return s.string(i.failure);
      break;
    case 'g':
      if (key == "generation") return s.integer(i.generation);
      break;
    case 'h':
      if (key == "hash") return s.string(i.hash);
      break;
    case 'i':
      if (key == "internal_failure") return s.boolean(i.internal_failure);
      break;
    case 'l':
      if (key == "labels") {
        // Read as views into the record, so a set the pool already holds costs no map.
        pairs.clear();
        if (!s.object([&](std::string_view k) {
              std::string_view v;
              if (!s.string(v)) return false;
              pairs.emplace_back(k, v);
              return true;
            }))
          return false;
        i.labels = pool.get(pairs);
        return true;
      }
      if (key == "limit") return scan_optional_resources(s, i.limit);
      break;
    case 'm':
      if (key == "migrations") return s.integer(i.migrations);
      break;
    case 'n':
      if (key == "node") return s.string(i.node);
      break;
    case 'o':
      if (key == "ordinal") return s.integer(i.ordinal);
      break;
    case 'p':
      if (key == "pending_reason") return s.string(i.pending_reason);
      if (key == "priority") {
        std::string_view text;
        if (!s.string(text)) return false;
        auto p = parse_priority(text);
        if (!p) return false;  // The slow way reports the corrupt record.
        i.priority = *p;
        return true;
      }
      if (key == "ports") {
        i.ports.clear();
        return s.object([&](std::string_view k) {
          int port = 0;
          if (!s.integer(port)) return false;
          i.ports.insert_or_assign(std::string(k), port);
          return true;
        });
      }
      break;
    case 'r':
      if (key == "role") return s.string(i.role);
      if (key == "request") return scan_resources(s, i.request);
      if (key == "reservation") return scan_optional_resources(s, i.reservation);
      if (key == "restarts") return s.integer(i.restarts);
      if (key == "restart_at_ms") return s.integer(i.restart_at_ms);
      break;
    case 's':
      if (key == "state") return scan_state(s, i.state);
      if (key == "started_ms") return s.integer(i.started_ms);
      if (key == "snapped_back_ms") return s.integer(i.snapped_back_ms);
      break;
    case 't':
      if (key == "tenant") return s.string(i.tenant);
      if (key == "throttled") return s.boolean(i.throttled);
      break;
    case 'u':
      if (key == "usage") return scan_optional_resources(s, i.usage);
      break;
    case 'v':
      if (key == "volumes") {
        i.volumes.clear();
        return s.array([&] {
          VolumeBinding v;
          if (!scan_volume(s, v)) return false;
          i.volumes.push_back(std::move(v));
          return true;
        });
      }
      break;
    default:
      break;
  }
  return false;  // A key from_json does not read: the slow way ignores it correctly.
}

}  // namespace

std::optional<NodeLabelsView> scan_node_labels(std::string_view text) {
  JsonScanner s(text);
  NodeLabelsView out;
  bool saw_labels = false;
  if (!s.next_is('{')) return std::nullopt;
  bool ok = s.object([&](std::string_view key) {
    if (key == "name") {
      if (out.name) return false;  // Repeated: nlohmann keeps the last; the slow way.
      std::string_view name;
      if (!s.string(name)) return false;
      out.name = name;
      return true;
    }
    if (key == "labels") {
      if (saw_labels) return false;
      saw_labels = true;
      return s.object([&](std::string_view k) {
        std::string_view v;
        if (!s.string(v)) return false;
        // gaia writes them sorted: anything else may repeat a key, which nlohmann
        // resolves its own way.
        if (!out.labels.empty() && !(out.labels.back().first < k)) return false;
        out.labels.emplace_back(k, v);
        return true;
      });
    }
    return s.skip_value();
  });
  if (!ok || !s.at_end()) return std::nullopt;
  return out;
}

std::optional<Instance> scan_instance(std::string_view text, LabelPool* pool) {
  JsonScanner s(text);
  Instance i;
  LabelPool own;
  LabelPool& labels = pool ? *pool : own;
  LabelPool::Pairs pairs;
  if (!s.next_is('{')) return std::nullopt;
  if (!s.object([&](std::string_view key) { return scan_member(s, key, i, labels, pairs); })) return std::nullopt;
  if (!s.at_end()) return std::nullopt;
  return i;
}

}  // namespace gaia
