#include "standin/fields.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gaia::standin::detail {

using nlohmann::json;

json merge_patch(json target, const json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      target[key] = merge_patch(target.contains(key) ? target[key] : json(nullptr), value);
    }
  }
  return target;
}

std::string path_string(const FieldPath& path) {
  std::string out;
  for (const std::string& key : path) out += "." + key;
  return out;
}

const json* value_at(const json& object, const FieldPath& path) {
  const json* at = &object;
  for (const std::string& key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

namespace {

bool is_prefix(const FieldPath& a, const FieldPath& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

bool overlaps(const FieldPath& a, const FieldPath& b) { return is_prefix(a, b) || is_prefix(b, a); }

// Whether `path`'s first keys name a field the server owns or the scope excludes.
bool excluded(const FieldPath& path, FieldScope scope) {
  if (path.empty()) return false;
  const std::string& top = path.front();
  if (top == "apiVersion" || top == "kind") return true;
  if (scope == FieldScope::NoStatus && top == "status") return true;
  if (scope == FieldScope::StatusOnly && top != "status") return true;
  if (top == "metadata" && path.size() >= 2) {
    static const std::set<std::string> server_owned = {
        "name",         "namespace",         "uid",  "resourceVersion", "generation", "creationTimestamp",
        "managedFields", "deletionTimestamp", "selfLink", "deletionGracePeriodSeconds"};
    return server_owned.contains(path[1]);
  }
  return false;
}

void collect_leaves(const json& value, FieldPath& path, FieldScope scope, FieldSet& out) {
  if (excluded(path, scope)) return;
  if (value.is_null()) return;
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, child] : value.items()) {
      path.push_back(key);
      collect_leaves(child, path, scope, out);
      path.pop_back();
    }
    return;
  }
  if (!path.empty()) out.insert(path);
}

// Removes the field at `path`, and the maps that removal leaves empty below the top
// level (an emptied metadata.labels goes, an emptied spec stays).
void erase_at(json& object, const FieldPath& path) {
  if (path.empty()) return;
  std::vector<json*> chain = {&object};
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    json* at = chain.back();
    if (!at->is_object() || !at->contains(path[i])) return;
    chain.push_back(&(*at)[path[i]]);
  }
  if (!chain.back()->is_object()) return;
  chain.back()->erase(path.back());
  for (size_t i = chain.size() - 1; i >= 2; --i) {
    if (!chain[i]->empty()) break;
    chain[i - 1]->erase(path[i - 1]);
  }
}

json to_fields_v1(const FieldSet& fields) {
  json root = json::object();
  for (const FieldPath& path : fields) {
    json* node = &root;
    for (const std::string& key : path) node = &(*node)["f:" + key];
    if (node->is_null()) *node = json::object();
  }
  // A leaf that is also the parent of another leaf (possible across operations) keeps
  // itself with the "." marker, as fieldsV1 does.
  for (const FieldPath& path : fields) {
    json* node = &root;
    for (const std::string& key : path) node = &(*node)["f:" + key];
    if (!node->empty() && !node->contains(".")) (*node)["."] = json::object();
  }
  return root;
}

void from_fields_v1(const json& node, FieldPath& path, FieldSet& out) {
  if (!node.is_object()) return;
  for (const auto& [key, child] : node.items()) {
    if (key == ".") {
      if (!path.empty()) out.insert(path);
    } else if (key.starts_with("f:")) {
      path.push_back(key.substr(2));
      if (child.is_object() && child.empty()) {
        out.insert(path);
      } else {
        from_fields_v1(child, path, out);
      }
      path.pop_back();
    }
    // "k:", "v:" and "i:" (list items) never come from this server: lists are atomic.
  }
}

// Adds `path` to `fields`, dropping what it overlaps so the set stays a set of leaves.
void add_leaf(FieldSet& fields, const FieldPath& path) {
  std::erase_if(fields, [&](const FieldPath& q) { return overlaps(q, path); });
  fields.insert(path);
}

}  // namespace

FieldSet leaf_paths(const json& object, FieldScope scope) {
  FieldSet out;
  FieldPath path;
  collect_leaves(object, path, scope, out);
  return out;
}

std::vector<ManagedEntry> managed_entries(const json& object) {
  std::vector<ManagedEntry> entries;
  const json* managed = value_at(object, {"metadata", "managedFields"});
  if (!managed || !managed->is_array()) return entries;
  for (const json& e : *managed) {
    if (!e.is_object()) continue;
    ManagedEntry entry;
    entry.manager = e.value("manager", "");
    entry.operation = e.value("operation", "");
    entry.api_version = e.value("apiVersion", "");
    entry.time = e.value("time", "");
    entry.subresource = e.value("subresource", "");
    FieldPath path;
    if (e.contains("fieldsV1")) from_fields_v1(e["fieldsV1"], path, entry.fields);
    entries.push_back(std::move(entry));
  }
  return entries;
}

void set_managed_entries(json& object, const std::vector<ManagedEntry>& entries) {
  json out = json::array();
  for (const ManagedEntry& e : entries) {
    if (e.fields.empty()) continue;
    json entry = {{"manager", e.manager},         {"operation", e.operation},   {"apiVersion", e.api_version},
                  {"time", e.time},               {"fieldsType", "FieldsV1"}, {"fieldsV1", to_fields_v1(e.fields)}};
    if (!e.subresource.empty()) entry["subresource"] = e.subresource;
    out.push_back(std::move(entry));
  }
  if (out.empty()) {
    if (object.contains("metadata")) object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = std::move(out);
  }
}

namespace {

ManagedEntry& entry_for(std::vector<ManagedEntry>& entries, const std::string& manager, const std::string& operation,
                        const std::string& subresource) {
  for (ManagedEntry& e : entries)
    if (e.manager == manager && e.operation == operation && e.subresource == subresource) return e;
  entries.push_back({manager, operation, "", "", subresource, {}});
  return entries.back();
}

}  // namespace

void record_update(const json& before, json& after, const std::string& manager, const std::string& api_version,
                   const std::string& time, FieldScope scope, const std::string& subresource) {
  std::vector<ManagedEntry> entries = before.is_null() ? std::vector<ManagedEntry>() : managed_entries(before);
  FieldSet changed;
  for (const FieldPath& p : leaf_paths(after, scope)) {
    const json* old = value_at(before, p);
    if (!old || *old != *value_at(after, p)) changed.insert(p);
  }
  FieldSet removed;
  for (const FieldPath& p : leaf_paths(before, scope))
    if (!value_at(after, p)) removed.insert(p);
  if (!changed.empty() || !removed.empty()) {
    // The updater takes what it changed from whoever owned it; what it removed is
    // nobody's any more.
    for (ManagedEntry& e : entries) {
      std::erase_if(e.fields, [&](const FieldPath& q) {
        return std::any_of(changed.begin(), changed.end(), [&](const FieldPath& p) { return overlaps(p, q); }) ||
               std::any_of(removed.begin(), removed.end(), [&](const FieldPath& p) { return is_prefix(p, q); });
      });
    }
    if (!changed.empty()) {
      ManagedEntry& mine = entry_for(entries, manager, "Update", subresource);
      for (const FieldPath& p : changed) add_leaf(mine.fields, p);
      mine.api_version = api_version;
      mine.time = time;
    }
  }
  set_managed_entries(after, entries);
}

ApplyOutcome server_side_apply(const json& live, const json& config, const std::string& manager, bool force,
                               FieldScope scope, const std::string& api_version, const std::string& time,
                               const std::string& subresource) {
  std::vector<ManagedEntry> entries = live.is_null() ? std::vector<ManagedEntry>() : managed_entries(live);
  FieldSet mine = leaf_paths(config, scope);
  FieldSet previous;
  for (const ManagedEntry& e : entries)
    if (e.manager == manager && e.operation == "Apply" && e.subresource == subresource) previous = e.fields;

  ApplyOutcome outcome;
  std::vector<std::pair<size_t, FieldPath>> taken;
  for (size_t i = 0; i < entries.size(); ++i) {
    // A manager does not conflict with itself, whatever the operation it wrote with.
    if (entries[i].manager == manager) continue;
    for (const FieldPath& q : entries[i].fields) {
      for (const FieldPath& p : mine) {
        if (!overlaps(p, q)) continue;
        const FieldPath& shorter = p.size() <= q.size() ? p : q;
        const json* live_value = value_at(live, shorter);
        const json* wanted = value_at(config, shorter);
        // Owned but gone: nothing left to protect. The same value: ownership is shared.
        if (!live_value || (wanted && *wanted == *live_value)) continue;
        outcome.conflicts.push_back({entries[i].manager, q});
        taken.emplace_back(i, q);
        break;
      }
    }
  }
  if (!outcome.conflicts.empty() && !force) return outcome;
  outcome.conflicts.clear();
  for (const auto& [i, q] : taken) entries[i].fields.erase(q);

  json result = live.is_null() ? json::object() : live;
  for (const FieldPath& q : previous) {
    if (std::any_of(mine.begin(), mine.end(), [&](const FieldPath& p) { return overlaps(p, q); })) continue;
    bool shared = std::any_of(entries.begin(), entries.end(), [&](const ManagedEntry& e) {
      if (e.manager == manager && e.operation == "Apply" && e.subresource == subresource) return false;
      return std::any_of(e.fields.begin(), e.fields.end(), [&](const FieldPath& o) { return overlaps(o, q); });
    });
    if (!shared) erase_at(result, q);
  }
  result = merge_patch(std::move(result), config);

  ManagedEntry& entry = entry_for(entries, manager, "Apply", subresource);
  if (entry.fields != mine || entry.time.empty()) entry.time = time;
  entry.fields = std::move(mine);
  entry.api_version = api_version;
  set_managed_entries(result, entries);
  outcome.object = std::move(result);
  return outcome;
}

std::string conflict_message(const std::vector<ApplyConflict>& conflicts) {
  if (conflicts.size() == 1)
    return fmt::format("Apply failed with 1 conflict: conflict with \"{}\": {}", conflicts[0].manager,
                       path_string(conflicts[0].path));
  std::vector<std::string> managers;
  for (const ApplyConflict& c : conflicts)
    if (std::find(managers.begin(), managers.end(), c.manager) == managers.end()) managers.push_back(c.manager);
  std::string out = fmt::format("Apply failed with {} conflicts: ", conflicts.size());
  for (size_t m = 0; m < managers.size(); ++m) {
    if (m > 0) out += "\n";
    out += fmt::format("conflicts with \"{}\":", managers[m]);
    for (const ApplyConflict& c : conflicts)
      if (c.manager == managers[m]) out += "\n- " + path_string(c.path);
  }
  return out;
}

}  // namespace gaia::standin::detail
