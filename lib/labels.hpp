#pragma once
// An instance's labels, shared between copies until one of them changes (copy on write).
//
// Every instance of a role carries the same labels (the role's own and gaia.io/app,
// role, tenant and version), and the decisions copy the state of every instance: a
// submission's working copy, a controller round's observed state, a load's kept state.
// As a std::map per instance those labels were half of what copying and freeing 50,000
// instances cost and half the memory each took (docs/benchmarks.md, "Round five"). Here
// a copy shares the map; a change makes the changed instance its own map first, so the
// value semantics of a map are kept: no change through one copy is ever seen through
// another.
//
// Reading is a std::map's const interface (and a `const std::map&` where a function
// wants one). Changing goes through set / erase / clear, never through a reference into
// the map: a reference taken before a copy would otherwise change both.
//
// A reference to the map (map(), the conversion, an iterator) is a view: valid until
// these labels next change. Unlike a std::map's, it may then show the labels as they
// were (the change went to a map of this object's own) or, once every holder of the
// old map let go, dangle. Take a copy of the Labels, not a reference, to keep them
// across a change.

#include <cstddef>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "lib/string_hash.hpp"

namespace gaia {

class Labels {
 public:
  using Map = std::map<std::string, std::string>;
  using key_type = Map::key_type;
  using mapped_type = Map::mapped_type;
  using value_type = Map::value_type;
  using size_type = Map::size_type;
  using const_iterator = Map::const_iterator;
  using iterator = const_iterator;

  Labels() = default;
  Labels(Map map);  // NOLINT(google-explicit-constructor): a map is a set of labels.
  Labels(std::initializer_list<value_type> init) : Labels(Map(init)) {}

  const Map& map() const { return m_map ? *m_map : empty_map(); }
  operator const Map&() const { return map(); }  // NOLINT(google-explicit-constructor)

  const_iterator begin() const { return map().begin(); }
  const_iterator end() const { return map().end(); }
  const_iterator find(const std::string& key) const { return map().find(key); }
  size_type count(const std::string& key) const { return map().count(key); }
  bool contains(const std::string& key) const { return map().contains(key); }
  const std::string& at(const std::string& key) const { return map().at(key); }
  size_type size() const { return m_map ? m_map->size() : 0; }
  bool empty() const { return size() == 0; }

  // Sets one label (this object's map only; copies keep theirs).
  void set(std::string key, std::string value);
  size_type erase(const std::string& key);
  void clear();

  // Whether both hold the very same map (so they are equal without comparing).
  bool shares_with(const Labels& other) const { return m_map == other.m_map; }

  friend bool operator==(const Labels& a, const Labels& b) { return a.m_map == b.m_map || a.map() == b.map(); }
  friend bool operator==(const Labels& a, const Map& b) { return a.map() == b; }

 private:
  static const Map& empty_map();
  // Whether this object holds the map alone (then it may change it in place).
  bool sole() const;
  // The map to change: this object's own, copied first when others share it.
  Map& own();

  std::shared_ptr<Map> m_map;  // Null: no labels. Shared by copies; changed only when not shared.
};

void to_json(nlohmann::json& j, const Labels& labels);
void from_json(const nlohmann::json& j, Labels& labels);

// Shares equal sets of labels between the instances decoded through it, so a load of
// 50,000 instances of a few hundred roles builds a few hundred maps, not 50,000. Keyed by
// the labels as read (name and value views into the record's text, in the record's
// order): records written in another order only share less. Bounded, so records that all
// differ (hand-written ones) cost little more than without it: past the bound a set is
// built for its instance alone. The bound is above the roles of the largest cluster
// measured (scale-1m: 7,299 apps), each role's instances carrying one set.
class LabelPool {
 public:
  using Pairs = std::vector<std::pair<std::string_view, std::string_view>>;
  static constexpr size_t k_max_entries = 65536;

  // The labels `pairs` holds (a later pair of the same name wins, as in a JSON object).
  Labels get(const Pairs& pairs);
  // The pool's labels equal to `labels` (sharing their map), or `labels` themselves,
  // which the pool then keeps: for labels decoded through another pool.
  Labels adopt(const Labels& labels);
  size_t size() const { return m_pool.size(); }

 private:
  std::string m_key;  // Reused between calls.
  StringMap<Labels> m_pool;
};

}  // namespace gaia
