#include "lib/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace gaia {

std::string_view node_state_name(NodeState s) {
  switch (s) {
    case NodeState::Ready: return "Ready";
    case NodeState::Cordoned: return "Cordoned";
    case NodeState::Down: return "Down";
  }
  return "?";
}

std::string_view instance_state_name(InstanceState s) {
  switch (s) {
    case InstanceState::Pending: return "Pending";
    case InstanceState::Placed: return "Placed";
    case InstanceState::Running: return "Running";
    case InstanceState::Failed: return "Failed";
    case InstanceState::Succeeded: return "Succeeded";
    case InstanceState::Terminating: return "Terminating";
  }
  return "?";
}

std::string_view storage_kind_name(StorageKind k) {
  return k == StorageKind::Claim ? "claim" : "local";
}

std::string storage_class_name_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > 253) return fmt::format("it is {} characters long, at most 253 are allowed", name.size());
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '.')
      return "use lowercase letters, digits, '-' and '.' only (a Kubernetes StorageClass name)";
  if (!alnum(name.front()) || !alnum(name.back())) return "it must start and end with a letter or digit";
  return "";
}

std::vector<StorageClass> default_storage_classes() {
  return {StorageClass{"hdd", StorageKind::Local, "spinning disks on the nodes", -1, {}},
          StorageClass{"ssd", StorageKind::Local, "solid-state disks on the nodes", -1, {}}};
}

std::vector<StorageClass> effective_storage_classes(const Snapshot& s) {
  if (!s.storage_classes.empty()) return s.storage_classes;
  std::vector<StorageClass> out = default_storage_classes();
  for (const auto& n : s.nodes)
    for (const auto& g : n.volume_groups)
      if (std::none_of(out.begin(), out.end(), [&](const StorageClass& c) { return c.name == g.storage_class; }))
        out.push_back(StorageClass{g.storage_class, StorageKind::Local, "", -1, {}});
  return out;
}

const StorageClass* find_storage_class(const Snapshot& s, std::string_view name) {
  for (const auto& c : s.storage_classes)
    if (c.name == name) return &c;
  if (!s.storage_classes.empty()) return nullptr;
  // A cluster without declared classes (made before classes existed, or built in code
  // for a what-if) has the defaults and, as local classes, whatever its nodes offer.
  static const std::vector<StorageClass> defaults = default_storage_classes();
  for (const auto& c : defaults)
    if (c.name == name) return &c;
  // Every class a node offers there is a local class without a selector, so one shared
  // record answers for all of them: only its kind is meaningful, and callers name the
  // class by the name they asked for.
  static const StorageClass offered{"", StorageKind::Local, "", -1, {}};
  for (const auto& n : s.nodes)
    for (const auto& g : n.volume_groups)
      if (g.storage_class == name) return &offered;
  return nullptr;
}

bool can_attach_class(const Node& n, const StorageClass& c) {
  for (const auto& [k, v] : c.node_selector) {
    auto it = n.labels.find(k);
    std::string have = it != n.labels.end() ? it->second
                       : k == "zone"        ? n.zone
                       : k == "rack"        ? n.rack
                       : k == "switch"      ? n.switch_
                                            : std::string();
    if (have != v) return false;
  }
  return true;
}

std::string volume_place(const std::string& node, const std::string& group) {
  return node.empty() ? fmt::format("in claim class {}", group) : fmt::format("on {}", node);
}

namespace {

// "<ordinal>.<role>.<app>.<tenant>" appended to `out` with one allocation at most: keys
// are made for every placement, event and lookup, and fmt's buffer and copy cost more
// than the bytes. The ordinal reads as fmt prints an int.
void append_key(std::string& out, int ordinal, const std::string& role, const std::string& app,
                const std::string& tenant) {
  char digits[16];
  char* end = std::to_chars(digits, digits + sizeof digits, ordinal).ptr;
  out.reserve(out.size() + static_cast<size_t>(end - digits) + role.size() + app.size() + tenant.size() + 3);
  out.append(digits, end);
  out.push_back('.');
  out.append(role);
  out.push_back('.');
  out.append(app);
  out.push_back('.');
  out.append(tenant);
}

}  // namespace

std::string Instance::key() const {
  std::string out;
  append_key(out, ordinal, role, app, tenant);
  return out;
}

void Instance::key_into(std::string& out) const {
  out.clear();
  append_key(out, ordinal, role, app, tenant);
}

}  // namespace gaia
