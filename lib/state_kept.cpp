// State's state file (StateOptions::state_file): the kept state written for the next
// process on the same store, and read back by it (lib/state_file.hpp holds the format,
// lib/kept_file.hpp the checks against the store).
#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <iterator>

#include "lib/journal.hpp"
#include "lib/kept_file.hpp"
#include "lib/state.hpp"
#include "lib/state_apply.hpp"
#include "lib/state_file.hpp"
#include "lib/threads.hpp"

namespace gaia {

namespace {

// The records of a state file laid into `st` as a full load lays them (its prefixes in
// order, each record through apply_put).
Result<void> apply_records(ClusterState& st, const std::vector<KeyValue>& records) {
  for (auto prefix : k_state_prefixes) {
    if (prefix == "instances/" || prefix == "nodes/") continue;
    auto first = std::lower_bound(records.begin(), records.end(), prefix,
                                  [](const KeyValue& kv, std::string_view p) { return kv.key < p; });
    auto last = std::find_if(first, records.end(), [&](const KeyValue& kv) { return !kv.key.starts_with(prefix); });
    for (auto it = first; it != last; ++it)
      if (auto r = apply_put(st, *it, /*in_order=*/true); !r) return fail(r.error());
  }
  return {};
}

// Whether the file's lists are as a load of the store leaves them: each in key order,
// without repeats, and the records all of the state. The checksum already refuses a
// damaged file; this refuses one that was written wrong.
bool in_key_order(const std::vector<KeyValue>& records) {
  for (size_t k = 0; k < records.size(); ++k)
    if (!is_state_record(records[k].key) || (k > 0 && !(records[k - 1].key < records[k].key))) return false;
  return true;
}

bool in_key_order(const StateFileContents& c) {
  if (!in_key_order(c.records)) return false;
  for (size_t k = 1; k < c.nodes.size(); ++k)
    if (!(c.nodes[k - 1].name < c.nodes[k].name)) return false;
  std::string before, key;
  for (size_t k = 0; k < c.instances.size(); ++k) {
    c.instances[k].key_into(key);
    if (k > 0 && !(before < key)) return false;
    std::swap(before, key);
  }
  return true;
}

}  // namespace

bool State::load_state_file() {
  // The changes read for this file are left to the world file's loader, if any, or freed.
  KeptChanges::Done done{m_options.kept_changes.get()};
  const auto& path = m_options.state_file;
  auto refuse = [&](const std::string& why) {
    if (m_options.note) m_options.note(fmt::format("state file {}: {}; reading the store", path.string(), why));
    return false;
  };
  std::string why;
  auto bytes = read_kept_file(path, &why);
  if (!bytes) return refuse(why);
  // The file's bulk decodes beside the store's answer to whether it may be used. Its
  // records (the apps' rendered documents among them, parsed as JSON) are laid into the
  // state here while the instances still decode.
  const bool beside = worker_threads() > 1;
  std::vector<KeyValue> records;
  std::promise<void> records_promise;
  std::future<void> records_ready = records_promise.get_future();
  auto decoded = std::async(beside ? std::launch::async : std::launch::deferred, [&] {
    bool handed = false;
    auto hand = [&](std::vector<KeyValue>&& r) {
      records = std::move(r);
      handed = true;
      records_promise.set_value();
    };
    // The waiter below is told in every case, a throw included.
    struct Tell {
      bool on;
      bool& handed;
      std::promise<void>& promise;
      ~Tell() {
        if (on && !handed) promise.set_value();
      }
    } tell{beside, handed, records_promise};
    return decode_state_file(*bytes, m_options.store_id, beside ? hand : std::function<void(std::vector<KeyValue>&&)>{});
  });
  std::expected<ChangesAfter, std::string> after = std::unexpected(std::string());
  if (auto head = peek_state_file(*bytes)) after = changes_after(m_store, *head, k_state_prefixes, m_options.kept_changes.get());
  auto st = std::make_shared<ClusterState>();
  std::optional<Result<void>> laid;  // The records laid into `st` while the rest decodes.
  if (beside) {
    records_ready.wait();
    if (after && in_key_order(records)) laid = apply_records(*st, records);
  }
  auto contents = decoded.get();
  if (!contents) return refuse(contents.error());
  if (!after) return refuse(after.error());
  if (!beside) records = std::move(contents->records);
  if (!in_key_order(records) || !in_key_order(*contents)) return refuse("its lists are out of key order (written wrong)");
  std::vector<Event>* since = &after->changes;
  // Half a large commit: a full read finishes it (lib/journal.hpp).
  for (const auto& e : *since)
    if (e.kv.key == k_journal_key && e.type == EventType::Put)
      return refuse("a large commit was half applied since (a full read finishes it)");

  st->snapshot.instances = std::move(contents->instances);
  st->snapshot.nodes = std::move(contents->nodes);
  if (!laid) laid = apply_records(*st, records);
  if (!*laid) return refuse(format_diagnostics(laid->error()));
  if (auto r = apply_changes(*st, *since); !r) return refuse(format_diagnostics(r.error()));
  // Every change to the state's keys up to there is in it.
  st->revision = after->head.revision;
  m_records.clear();
  for (auto& kv : records) m_records.emplace_hint(m_records.end(), kv.key, std::move(kv));
  apply_to_records(m_records, *since);
  m_cache = std::move(st);
  if (m_options.note)
    m_options.note(fmt::format("state file {}: used, at revision {}; {} change(s) since read, {} of them applied",
                               path.string(), after->file_revision, after->read, since->size()));
  if (kept_file_due(*after, m_options.kept_changes.get())) save_state_file(after->head);
  return true;
}

void State::save_state_file(std::optional<KeptFileHead> head) {
  if (!m_cache || m_cache->revision <= 0) return;
  const ClusterState& st = *m_cache;
  const auto& path = m_options.state_file;
  auto skip = [&](const std::string& why) {
    if (m_options.note) m_options.note(fmt::format("state file {}: not written: {}", path.string(), why));
  };
  const size_t count = st.snapshot.instances.size() + st.snapshot.nodes.size() + m_records.size();
  if (count < m_options.state_file_min_records)
    return skip(fmt::format("{} record(s), fewer than {}, read faster from the store", count,
                            m_options.state_file_min_records));
  // What the store shows at the state's revision, which a reader checks the file
  // against; a store that has moved on since, or keeps no history hash, gets no file.
  if (!head) head = kept_head(m_store, st.revision);
  if (!head || head->revision != st.revision)
    return skip(fmt::format("the store keeps no history hash, or not that of revision {} any more", st.revision));
  if (m_options.note) m_options.note(fmt::format("state file {}: writing, at revision {}", path.string(), st.revision));
  if (m_options.kept_changes) m_options.kept_changes->writing(st.revision);  // The world file follows.
  std::vector<KeyValue> records;
  records.reserve(m_records.size());
  for (const auto& [key, kv] : m_records) records.push_back(kv);
  // Encoded and written on a thread of its own, beside the command. It holds the kept
  // state meanwhile, which a refresh therefore waits for (refresh_cache) rather than
  // copy it; the State's destructor waits for the write.
  if (m_state_file_writer.valid()) m_state_file_writer.wait();
  std::promise<void> encoded;
  m_state_file_encoded = encoded.get_future().share();
  m_state_file_writer =
      std::async(std::launch::async, [state = std::shared_ptr<const ClusterState>(m_cache), records = std::move(records),
                                      encoded = std::move(encoded), path = m_options.state_file,
                                      id = m_options.store_id, head = *head]() mutable {
        std::vector<const KeyValue*> refs;
        refs.reserve(records.size());
        for (const auto& kv : records) refs.push_back(&kv);
        std::string bytes = encode_state_file(id, head, refs, state->snapshot.nodes, state->snapshot.instances);
        state.reset();
        encoded.set_value();
        write_kept_file(path, bytes);
      });
}

}  // namespace gaia
