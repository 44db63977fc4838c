#pragma once
// The config and label centers in the store (docs/cli.md#gaia-config, #gaia-label).
//
// Config keys are dotted paths ("hdfs.replication") with JSON values, kept per scope:
// "_global" or a tenant name. Each write is one store key,
//   config/<scope>/<key>                              the current value (JSON text)
//   config-history/<scope>/<key>/<20-digit revision>  one past write (bounded per key)
// and its revision is the store revision that wrote it. A render sees one resolved tree
// per tenant: global keys, then the tenant's keys over them (tenant beats global), and
// inside a scope deeper keys over shallower ones, so `web` = {replicas: 3} with
// `web.replicas` = 5 reads as {replicas: 5}. Every path of the tree is a key a render can
// read (gaia.config('web') is the object, gaia.config('web.replicas') one value), and its
// revision is the newest write that shaped it.
//
// Labels are strings on nodes (Node.labels, what the scheduler matches), on apps (per
// tenant) and on tenants:
//   labels/app/<tenant>/<app>/<key>    labels/tenant/<tenant>/<key>
// one key per label, so each label has its own revision. A node label's revision is its
// node record's, which also moves for other reasons (state, cordon): compare node label
// values, not revisions.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/config_source.hpp"
#include "lib/error.hpp"
#include "lib/store.hpp"

namespace gaia {

inline constexpr const char* k_global_scope = "_global";
inline constexpr size_t k_config_history_limit = 100;

// One stored config key.
struct ConfigEntry {
  std::string scope;  // "_global" or a tenant.
  std::string key;    // Dotted path.
  nlohmann::json value;
  int64_t revision = 0;  // mod_revision of the key; 0 for values not from the store.
  std::string source;    // "center:_global", "center:<tenant>", "file:PATH".
};

// Entries applied in order: later layers beat earlier ones; inside a layer shallower keys
// go first, so deeper ones refine them.
using ConfigLayer = std::vector<ConfigEntry>;

// The resolved tree as a render reads it: every path (and every prefix of one) -> its
// value, with the newest revision among the entries that shaped it.
std::map<std::string, ConfigValue> resolve_config(const std::vector<ConfigLayer>& layers);

// The problem with a config key ("" when valid): dot-separated segments of letters,
// digits, '_' and '-', none empty, at most 253 characters.
std::string config_key_problem(std::string_view key);
// Whether `a` is `b`, or one of them is a parent of the other ("web" and "web.port").
bool config_keys_overlap(std::string_view a, std::string_view b);

// One stored label. For nodes, `tenant` is empty and revision is the node record's.
struct LabelEntry {
  std::string kind;    // node | app | tenant
  std::string tenant;  // app labels only.
  std::string name;
  std::string key, value;
  int64_t revision = 0;
};

// One past write of a config key.
struct ConfigHistoryEntry {
  int64_t revision = 0;
  std::optional<nlohmann::json> value;  // nullopt: the key was unset.
  std::string op, time;
};

// The centers as read from the store at one moment, and the snapshot each tenant's
// renders see. Also the what-if model: put/erase change the loaded copy only, so a
// dry run resolves exactly what a write would.
class StoreConfigSource final : public ConfigSource {
 public:
  StoreConfigSource() = default;
  StoreConfigSource(const StoreConfigSource&) = default;
  StoreConfigSource& operator=(const StoreConfigSource&) = default;
  // A move shares the label list rather than take it, so the source moved from still
  // has one (a change copies it first, as for any other holder).
  StoreConfigSource(StoreConfigSource&& other) noexcept
      : m_entries(std::move(other.m_entries)), m_labels(other.m_labels), m_revision(other.m_revision) {}
  StoreConfigSource& operator=(StoreConfigSource&& other) noexcept {
    m_entries = std::move(other.m_entries);
    m_labels = other.m_labels;
    m_revision = other.m_revision;
    return *this;
  }
  static Result<StoreConfigSource> load(Store& store);

  ConfigSnapshot snapshot(const std::string& tenant) const override;
  // Global entries, then the tenant's: the layers resolve_config takes.
  std::vector<ConfigLayer> config_layers(const std::string& tenant) const;
  // The labels as the tenant's renders see them (ConfigSnapshot::more_labels): every
  // node's and tenant's, and those of this tenant's apps, looked up in the list as it is
  // now (a later put_label or erase_label leaves it as it was).
  std::function<std::optional<ConfigValue>(const std::string&, const std::string&, const std::string&)> label_lookup(
      const std::string& tenant) const;

  const std::vector<ConfigEntry>& entries() const { return m_entries; }
  const std::vector<LabelEntry>& labels() const { return *m_labels; }
  const ConfigEntry* find(const std::string& scope, const std::string& key) const;
  const LabelEntry* find_label(const std::string& kind, const std::string& tenant, const std::string& name,
                               const std::string& key) const;
  int64_t revision() const { return m_revision; }  // Store revision when loaded.

  void put(ConfigEntry e);
  void erase(const std::string& scope, const std::string& key);
  void put_label(LabelEntry e);
  void erase_label(const std::string& kind, const std::string& tenant, const std::string& name,
                   const std::string& key);

 private:
  std::vector<ConfigEntry> m_entries;  // Sorted by (scope, key).
  // Sorted by (kind, tenant, name, key). Shared with the lookups handed out, so a
  // change copies it first when one is still held.
  std::shared_ptr<std::vector<LabelEntry>> m_labels = std::make_shared<std::vector<LabelEntry>>();
  std::vector<LabelEntry>& labels_to_change();
  int64_t m_revision = 0;
};

// Store keys.
namespace keys {
std::string config(const std::string& scope, const std::string& key);
std::string config_history_prefix(const std::string& scope, const std::string& key);
std::string label(const std::string& kind, const std::string& tenant, const std::string& name, const std::string& key);
}  // namespace keys

// One change of a config write: a value to set, or nullopt to unset.
struct ConfigEdit {
  std::string key;
  std::optional<nlohmann::json> value;
};

struct CenterWrite {
  bool succeeded = false;  // False: a key changed since it was read; nothing written.
  int64_t revision = 0;    // Revision of the write.
};

// Writes `edits` in `scope` as one transaction that applies only if each key still has
// the mod_revision in `expected` (0 or absent: the key must not exist), with one history
// entry per key (op and time recorded) and the oldest history beyond `history_limit`
// dropped.
Result<CenterWrite> write_config(Store& store, const std::string& scope, const std::vector<ConfigEdit>& edits,
                                 const std::map<std::string, int64_t>& expected, const std::string& op,
                                 const std::string& time, size_t history_limit = k_config_history_limit);

// Past writes of one key, oldest first.
Result<std::vector<ConfigHistoryEntry>> config_history(Store& store, const std::string& scope, const std::string& key);

// One change of a label write: a value, or nullopt to remove the label.
struct LabelChange {
  std::string key;
  std::optional<std::string> value;
};

// Writes app or tenant labels (kind "app" needs `tenant`) as one transaction guarded by
// `expected` (label key -> mod_revision, 0 for absent).
Result<CenterWrite> write_labels(Store& store, const std::string& kind, const std::string& tenant,
                                 const std::string& name, const std::vector<LabelChange>& changes,
                                 const std::map<std::string, int64_t>& expected);

}  // namespace gaia
