#include "lib/config_center.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <tuple>

#include "lib/instance_scan.hpp"

namespace gaia {

namespace {

using json = nlohmann::json;

std::vector<std::string> split_key(std::string_view key) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t dot = key.find('.', start);
    out.emplace_back(key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

bool path_prefix(const std::vector<std::string>& prefix, const std::vector<std::string>& path) {
  return prefix.size() <= path.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

// One entry that shaped the tree; entries later overwritten (at or above their path) are
// dropped, so a revision is never claimed by a value that no longer shows.
struct Writer {
  std::vector<std::string> path;
  int64_t revision = 0;
  std::string source;
};

void flatten(const json& node, std::vector<std::string>& path, const std::vector<Writer>& writers,
             std::map<std::string, ConfigValue>& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    path.push_back(it.key());
    ConfigValue v;
    v.value = it.value();
    size_t best_depth = 0;
    const Writer* owner = nullptr;
    const Writer* newest_below = nullptr;
    for (const auto& w : writers) {
      bool above = path_prefix(w.path, path);
      bool below = !above && path_prefix(path, w.path);
      if (!above && !below) continue;
      v.revision = std::max(v.revision, w.revision);
      if (above && w.path.size() >= best_depth) {
        best_depth = w.path.size();
        owner = &w;
      }
      if (below && (!newest_below || w.revision > newest_below->revision)) newest_below = &w;
    }
    if (owner) v.source = owner->source;
    else if (newest_below) v.source = newest_below->source;
    std::string key = fmt::format("{}", fmt::join(path, "."));
    out[key] = v;
    if (it.value().is_object()) flatten(it.value(), path, writers, out);
    path.pop_back();
  }
}

Diagnostic corrupt(const KeyValue& kv, const std::string& what) {
  return Diagnostic{{}, kv.key, fmt::format("corrupt config-center record in the store: {}", what),
                    "the store was modified by something other than gaia; restore it from a backup"};
}

std::string scope_source(const std::string& scope) { return "center:" + scope; }

}  // namespace

std::map<std::string, ConfigValue> resolve_config(const std::vector<ConfigLayer>& layers) {
  json root = json::object();
  std::vector<Writer> writers;
  for (const auto& layer : layers) {
    std::vector<const ConfigEntry*> order;
    for (const auto& e : layer) order.push_back(&e);
    std::stable_sort(order.begin(), order.end(), [](const ConfigEntry* a, const ConfigEntry* b) {
      auto da = std::count(a->key.begin(), a->key.end(), '.'), db = std::count(b->key.begin(), b->key.end(), '.');
      return da != db ? da < db : a->key < b->key;
    });
    for (const ConfigEntry* e : order) {
      auto segs = split_key(e->key);
      json* cur = &root;
      for (size_t k = 0; k + 1 < segs.size(); ++k) {
        if (!cur->is_object()) *cur = json::object();
        cur = &(*cur)[segs[k]];
      }
      if (!cur->is_object()) *cur = json::object();
      (*cur)[segs.back()] = e->value;
      std::erase_if(writers, [&](const Writer& w) { return path_prefix(segs, w.path); });
      writers.push_back(Writer{std::move(segs), e->revision, e->source});
    }
  }
  std::map<std::string, ConfigValue> out;
  std::vector<std::string> path;
  flatten(root, path, writers, out);
  return out;
}

std::string config_key_problem(std::string_view key) {
  if (key.empty()) return "the key is empty";
  if (key.size() > 253) return fmt::format("the key is {} characters long; at most 253 are allowed", key.size());
  for (const auto& seg : split_key(key)) {
    if (seg.empty()) return "the key has an empty segment (a leading, trailing or double '.')";
    for (char c : seg)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        return fmt::format("'{}' is not allowed in a key: segments hold letters, digits, '_' and '-', separated by '.'",
                           std::string(1, c));
  }
  return "";
}

bool config_keys_overlap(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto parent_of = [](std::string_view p, std::string_view c) {
    return c.size() > p.size() && c.starts_with(p) && c[p.size()] == '.';
  };
  return parent_of(a, b) || parent_of(b, a);
}

namespace keys {
std::string config(const std::string& scope, const std::string& key) { return "config/" + scope + "/" + key; }
std::string config_history_prefix(const std::string& scope, const std::string& key) {
  return "config-history/" + scope + "/" + key + "/";
}
std::string label(const std::string& kind, const std::string& tenant, const std::string& name, const std::string& key) {
  if (kind == "app") return "labels/app/" + tenant + "/" + name + "/" + key;
  return "labels/" + kind + "/" + name + "/" + key;
}
}  // namespace keys

namespace {

bool label_order(const LabelEntry& a, const LabelEntry& b) {
  return std::tie(a.kind, a.tenant, a.name, a.key) < std::tie(b.kind, b.tenant, b.name, b.key);
}

}  // namespace

Result<StoreConfigSource> StoreConfigSource::load(Store& store) {
  StoreConfigSource s;
  auto rev = store.revision();
  if (!rev) return fail(rev.error().to_diagnostic());
  s.m_revision = *rev;
  auto config = store.range("config/");
  if (!config) return fail(config.error().to_diagnostic());
  Diagnostics errors;
  for (const auto& kv : *config) {
    std::string_view rest = std::string_view(kv.key).substr(7);
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) {
      errors.push_back(corrupt(kv, "expected config/<scope>/<key>"));
      continue;
    }
    ConfigEntry e;
    e.scope = std::string(rest.substr(0, slash));
    e.key = std::string(rest.substr(slash + 1));
    e.revision = kv.mod_revision;
    e.source = scope_source(e.scope);
    try {
      e.value = json::parse(kv.value);
    } catch (const json::exception& x) {
      errors.push_back(corrupt(kv, x.what()));
      continue;
    }
    s.m_entries.push_back(std::move(e));
  }
  auto labels = store.range("labels/");
  if (!labels) return fail(labels.error().to_diagnostic());
  for (const auto& kv : *labels) {
    std::string_view rest = std::string_view(kv.key).substr(7);
    LabelEntry e;
    e.revision = kv.mod_revision;
    e.value = kv.value;
    auto take = [&](std::string& into) {
      auto slash = rest.find('/');
      if (slash == std::string_view::npos) return false;
      into = std::string(rest.substr(0, slash));
      rest.remove_prefix(slash + 1);
      return true;
    };
    bool ok = take(e.kind);
    if (ok && e.kind == "app") ok = take(e.tenant);
    ok = ok && (e.kind == "app" || e.kind == "tenant") && take(e.name) && !rest.empty();
    if (!ok) {
      errors.push_back(corrupt(kv, "expected labels/app/<tenant>/<app>/<key> or labels/tenant/<tenant>/<key>"));
      continue;
    }
    e.key = std::string(rest);
    s.m_labels->push_back(std::move(e));
  }
  auto nodes = store.range("nodes/");
  if (!nodes) return fail(nodes.error().to_diagnostic());
  for (const auto& kv : *nodes) {
    if (auto fast = scan_node_labels(kv.value)) {
      std::string name = fast->name ? std::string(*fast->name) : kv.key.substr(6);
      for (const auto& [k, v] : fast->labels)
        s.m_labels->push_back(LabelEntry{"node", "", name, std::string(k), std::string(v), kv.mod_revision});
      continue;
    }
    try {
      json j = json::parse(kv.value);
      std::string name = j.value("name", kv.key.substr(6));
      if (j.contains("labels") && j["labels"].is_object())
        for (const auto& [k, v] : j["labels"].items())
          if (v.is_string()) s.m_labels->push_back(LabelEntry{"node", "", name, k, v.get<std::string>(), kv.mod_revision});
    } catch (const json::exception& x) {
      errors.push_back(corrupt(kv, x.what()));
    }
  }
  if (!errors.empty()) return fail(std::move(errors));
  std::sort(s.m_entries.begin(), s.m_entries.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return std::tie(a.scope, a.key) < std::tie(b.scope, b.key); });
  std::sort(s.m_labels->begin(), s.m_labels->end(), label_order);
  return s;
}

std::vector<ConfigLayer> StoreConfigSource::config_layers(const std::string& tenant) const {
  std::vector<ConfigLayer> layers(2);
  for (const auto& e : m_entries) {
    if (e.scope == k_global_scope) layers[0].push_back(e);
    else if (e.scope == tenant) layers[1].push_back(e);
  }
  return layers;
}

std::function<std::optional<ConfigValue>(const std::string&, const std::string&, const std::string&)>
StoreConfigSource::label_lookup(const std::string& tenant) const {
  return [labels = std::shared_ptr<const std::vector<LabelEntry>>(m_labels), tenant](
             const std::string& kind, const std::string& name, const std::string& key) -> std::optional<ConfigValue> {
    // Only app labels belong to a tenant; the others are kept without one.
    LabelEntry probe{kind, kind == "app" ? tenant : std::string(), name, key, "", 0};
    // The last of equal entries, as a map filled in list order kept it.
    auto it = std::upper_bound(labels->begin(), labels->end(), probe, label_order);
    if (it == labels->begin()) return std::nullopt;
    --it;
    if (label_order(*it, probe)) return std::nullopt;
    return ConfigValue{it->value, it->revision, it->kind == "node" ? "node" : "center:labels"};
  };
}

ConfigSnapshot StoreConfigSource::snapshot(const std::string& tenant) const {
  ConfigSnapshot s;
  s.config = resolve_config(config_layers(tenant));
  s.more_labels = label_lookup(tenant);
  return s;
}

const ConfigEntry* StoreConfigSource::find(const std::string& scope, const std::string& key) const {
  for (const auto& e : m_entries)
    if (e.scope == scope && e.key == key) return &e;
  return nullptr;
}

const LabelEntry* StoreConfigSource::find_label(const std::string& kind, const std::string& tenant,
                                                const std::string& name, const std::string& key) const {
  for (const auto& l : *m_labels)
    if (l.kind == kind && l.tenant == tenant && l.name == name && l.key == key) return &l;
  return nullptr;
}

void StoreConfigSource::put(ConfigEntry e) {
  if (e.source.empty()) e.source = scope_source(e.scope);
  auto it = std::lower_bound(m_entries.begin(), m_entries.end(), e, [](const ConfigEntry& a, const ConfigEntry& b) {
    return std::tie(a.scope, a.key) < std::tie(b.scope, b.key);
  });
  if (it != m_entries.end() && it->scope == e.scope && it->key == e.key) *it = std::move(e);
  else m_entries.insert(it, std::move(e));
}

void StoreConfigSource::erase(const std::string& scope, const std::string& key) {
  std::erase_if(m_entries, [&](const ConfigEntry& e) { return e.scope == scope && e.key == key; });
}

std::vector<LabelEntry>& StoreConfigSource::labels_to_change() {
  if (m_labels.use_count() > 1) m_labels = std::make_shared<std::vector<LabelEntry>>(*m_labels);
  return *m_labels;
}

void StoreConfigSource::put_label(LabelEntry e) {
  auto& labels = labels_to_change();
  auto it = std::lower_bound(labels.begin(), labels.end(), e, label_order);
  if (it != labels.end() && it->kind == e.kind && it->tenant == e.tenant && it->name == e.name && it->key == e.key)
    *it = std::move(e);
  else labels.insert(it, std::move(e));
}

void StoreConfigSource::erase_label(const std::string& kind, const std::string& tenant, const std::string& name,
                                    const std::string& key) {
  std::erase_if(labels_to_change(), [&](const LabelEntry& l) {
    return l.kind == kind && l.tenant == tenant && l.name == name && l.key == key;
  });
}

Result<CenterWrite> write_config(Store& store, const std::string& scope, const std::vector<ConfigEdit>& edits,
                                 const std::map<std::string, int64_t>& expected, const std::string& op,
                                 const std::string& time, size_t history_limit) {
  auto rev = store.revision();
  if (!rev) return fail(rev.error().to_diagnostic());
  // History keys are named by the revision the write expects to get; its real revision
  // is the history key's own mod_revision (the same transaction), so a concurrent write
  // elsewhere only shifts the name, never the order of one key's history.
  std::string suffix = fmt::format("{:020d}", *rev + 1);
  Txn txn;
  for (const auto& e : edits) {
    auto it = expected.find(e.key);
    std::string key = keys::config(scope, e.key);
    txn.compares.push_back({key, it == expected.end() ? 0 : it->second});
    json entry = {{"op", op}, {"time", time}};
    if (e.value) {
      txn.puts.push_back({key, e.value->dump()});
      entry["value"] = *e.value;
    } else {
      txn.deletes.push_back({key});
      entry["unset"] = true;
    }
    std::string prefix = keys::config_history_prefix(scope, e.key);
    txn.puts.push_back({prefix + suffix, entry.dump()});
    if (history_limit > 0) {
      auto past = store.range(prefix);
      if (!past) return fail(past.error().to_diagnostic());
      size_t total = past->size() + 1;
      for (size_t k = 0; total > history_limit && k < past->size(); ++k, --total)
        txn.deletes.push_back({(*past)[k].key});
    }
  }
  auto r = store.txn(txn);
  if (!r) return fail(r.error().to_diagnostic());
  return CenterWrite{r->succeeded, r->revision};
}

Result<std::vector<ConfigHistoryEntry>> config_history(Store& store, const std::string& scope, const std::string& key) {
  auto past = store.range(keys::config_history_prefix(scope, key));
  if (!past) return fail(past.error().to_diagnostic());
  std::vector<ConfigHistoryEntry> out;
  for (const auto& kv : *past) {
    ConfigHistoryEntry h;
    h.revision = kv.mod_revision;
    try {
      json j = json::parse(kv.value);
      if (j.contains("value")) h.value = j["value"];
      h.op = j.value("op", "");
      h.time = j.value("time", "");
    } catch (const json::exception& x) {
      return fail(corrupt(kv, x.what()));
    }
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(),
            [](const ConfigHistoryEntry& a, const ConfigHistoryEntry& b) { return a.revision < b.revision; });
  return out;
}

Result<CenterWrite> write_labels(Store& store, const std::string& kind, const std::string& tenant,
                                 const std::string& name, const std::vector<LabelChange>& changes,
                                 const std::map<std::string, int64_t>& expected) {
  if (kind != "app" && kind != "tenant") throw std::invalid_argument("write_labels: kind must be app or tenant");
  Txn txn;
  for (const auto& c : changes) {
    std::string key = keys::label(kind, tenant, name, c.key);
    auto it = expected.find(c.key);
    txn.compares.push_back({key, it == expected.end() ? 0 : it->second});
    if (c.value) txn.puts.push_back({key, *c.value});
    else txn.deletes.push_back({key});
  }
  auto r = store.txn(txn);
  if (!r) return fail(r.error().to_diagnostic());
  return CenterWrite{r->succeeded, r->revision};
}

}  // namespace gaia
