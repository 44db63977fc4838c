#pragma once
// How the store's keys land in a ClusterState (lib/state.hpp). A full load and the
// incremental refresh that follows changes (State with StateOptions::follow_changes)
// both go through these two functions, so a state brought up to date change by change
// is the same, field for field, as one read afresh at the same revision: every list
// stays sorted by key, as a range read returns it.

#include <array>
#include <map>
#include <string_view>

#include "lib/error.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"

namespace gaia {

// The prefixes a ClusterState is made of, in the order a full load reads them: the
// instances first, so they are decoded on other threads while the rest is read and
// applied; then the others in the order they are applied (an app's record before its
// status).
inline constexpr std::array<std::string_view, 8> k_state_prefixes = {
    "instances/", "meta/", "nodes/", "tenants/", "apps/", "status/apps/", "settings/", "heartbeats/"};

// More revisions than this since a kept state, and a fresh read is cheaper than
// replaying them (each revision is at least one change, many are whole submits).
inline constexpr int64_t k_max_replay_revisions = 20000;

// Whether `key` is a record of the state other than an instance or a node (those a
// state file keeps as the store holds them; it keeps those two decoded).
bool is_state_record(std::string_view key);

// Applies changes to such records (by key), ignoring every other key.
void apply_to_records(std::map<std::string, KeyValue>& records, const std::vector<Event>& changes);

// Puts one key's value into `st`: a node, tenant, app (with its roles), app status,
// instance, setting, heartbeat, the sequence key or the scheduler profile. Keys of no
// such kind (events, journal chunks) are ignored. A record that cannot be decoded is an
// error naming its key; `st` is then unchanged.
// `in_order`: the caller feeds keys in key order into lists that hold only smaller
// keys (a full load), so objects are appended without a search. `pool` shares equal
// instance labels between the calls given it (lib/labels.hpp).
Result<void> apply_put(ClusterState& st, const KeyValue& kv, bool in_order = false, LabelPool* pool = nullptr);

// Decodes instance records (in key order, as a full load reads them) onto the end of
// `out`, on up to `threads` threads for a long list: a load of 50,000 instances spends
// about half its time here. The result is the one of decoding them in turn through
// `pool`, labels shared included; on a record that cannot be decoded, the error of the
// first such record in the list, and `out` as it was.
Result<void> decode_instances(std::vector<Instance>& out, const std::vector<KeyValue>& kvs, LabelPool& pool,
                              unsigned threads);

// Decodes node records (in key order), as apply_put would one by one; on a record that
// cannot be decoded, the error of the first.
Result<std::vector<Node>> decode_nodes(const std::vector<KeyValue>& kvs);

// Removes one key's object from `st`; unknown keys are ignored.
void apply_delete(ClusterState& st, std::string_view key);

// Applies changes in order, as apply_put and apply_delete would one by one, but merges
// new and removed instances into the sorted list in one pass: a submit of thousands of
// instances costs one merge, not one insertion into the middle of the list each.
Result<void> apply_changes(ClusterState& st, const std::vector<Event>& changes);

}  // namespace gaia
