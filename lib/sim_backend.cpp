#include "lib/sim_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "lib/huge_pages.hpp"
#include "lib/codec.hpp"
#include "lib/instance_scan.hpp"
#include "lib/json_scan.hpp"
#include "lib/kept_file.hpp"
#include "lib/sim_world_file.hpp"
#include "lib/threads.hpp"

namespace gaia {

namespace {

constexpr std::string_view k_copies = "sim/copies/";
constexpr const char* k_usage = "sim/usage";

std::string copy_key(const std::string& instance) { return std::string(k_copies) + instance; }

BackendError from_store(const StoreError& e) {
  // The world is in the store: an unreadable store is an unreachable backend.
  return BackendError{BackendErrc::Unavailable, "sim backend: " + e.to_string()};
}

}  // namespace

std::string_view backend_errc_name(BackendErrc c) {
  switch (c) {
    case BackendErrc::Unavailable: return "unavailable";
    case BackendErrc::Rejected: return "rejected";
    case BackendErrc::NotFound: return "not found";
    case BackendErrc::Timeout: return "timeout";
    case BackendErrc::Throttled: return "throttled";
  }
  return "unknown";
}

std::string BackendError::to_string() const { return fmt::format("{} ({})", message, backend_errc_name(code)); }

std::string_view copy_phase_name(CopyPhase p) {
  switch (p) {
    case CopyPhase::Starting: return "Starting";
    case CopyPhase::Running: return "Running";
    case CopyPhase::Exited: return "Exited";
    case CopyPhase::Failed: return "Failed";
  }
  return "Unknown";
}

NLOHMANN_JSON_SERIALIZE_ENUM(CopyPhase, {{CopyPhase::Starting, "Starting"},
                                         {CopyPhase::Running, "Running"},
                                         {CopyPhase::Exited, "Exited"},
                                         {CopyPhase::Failed, "Failed"}})

void to_json(nlohmann::json& j, const SimCopy& c) {
  j = nlohmann::json{{"node", c.node},     {"generation", c.generation}, {"phase", c.phase},
                     {"started_ms", c.started_ms}, {"tenant", c.tenant}, {"app", c.app},
                     {"role", c.role},     {"ordinal", c.ordinal},       {"request", c.request}};
  if (c.limit) j["limit"] = *c.limit;
  if (c.exit_code) j["exit_code"] = c.exit_code;
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (c.internal) j["internal"] = true;
}

void from_json(const nlohmann::json& j, SimCopy& c) {
  c.node = j.at("node").get<std::string>();
  c.generation = j.value("generation", int64_t{0});
  c.phase = j.value("phase", CopyPhase::Running);
  c.started_ms = j.value("started_ms", int64_t{0});
  c.tenant = j.value("tenant", std::string{});
  c.app = j.value("app", std::string{});
  c.role = j.value("role", std::string{});
  c.ordinal = j.value("ordinal", 0);
  c.request = j.value("request", Resources{});
  if (j.contains("limit")) c.limit = j["limit"].get<Resources>();
  c.exit_code = j.value("exit_code", 0);
  c.reason = j.value("reason", std::string{});
  c.internal = j.value("internal", false);
}

SimBackend::SimBackend(Store* store, SimWorldFileOptions file) : m_store(store), m_file(std::move(file)) {}

SimBackend::~SimBackend() {
  if (m_file_writer.valid()) m_file_writer.wait();
}

namespace {

// More changes than this since the kept world are read afresh rather than replayed.
constexpr size_t k_sim_max_replay = 100000;

BackendError corrupt_copy(const std::string& key, const std::exception& e) {
  return BackendError{BackendErrc::Unavailable, fmt::format("sim backend: corrupt {}: {}", key, e.what())};
}

bool scan_copy_phase(JsonScanner& s, CopyPhase& phase) {
  std::string_view name;
  if (!s.string(name)) return false;
  for (auto p : {CopyPhase::Starting, CopyPhase::Running, CopyPhase::Exited, CopyPhase::Failed})
    if (copy_phase_name(p) == name) {
      phase = p;
      return true;
    }
  return false;  // nlohmann reads an unknown name as the first phase: the slow way.
}

// The fast path for one instance's copies, as from_json(SimCopy) reads them, for
// records of the shape this file writes (lib/json_scan.hpp); nothing for anything else.
std::optional<std::vector<SimCopy>> scan_copies(std::string_view text) {
  JsonScanner s(text);
  std::vector<SimCopy> out;
  if (!s.next_is('[')) return std::nullopt;
  bool ok = s.array([&] {
    SimCopy c;
    bool has_node = false;
    bool read = s.object([&](std::string_view key) {
      if (key == "node") return has_node = s.string(c.node);
      if (key == "generation") return s.integer(c.generation);
      if (key == "phase") return scan_copy_phase(s, c.phase);
      if (key == "started_ms") return s.integer(c.started_ms);
      if (key == "tenant") return s.string(c.tenant);
      if (key == "app") return s.string(c.app);
      if (key == "role") return s.string(c.role);
      if (key == "ordinal") return s.integer(c.ordinal);
      if (key == "request") return scan_resources(s, c.request);
      if (key == "limit") {
        Resources r;
        if (!scan_resources(s, r)) return false;
        c.limit = r;
        return true;
      }
      if (key == "exit_code") return s.integer(c.exit_code);
      if (key == "reason") return s.string(c.reason);
      if (key == "internal") return s.boolean(c.internal);
      return false;
    });
    // from_json requires the node.
    if (!read || !has_node) return false;
    out.push_back(std::move(c));
    return true;
  });
  if (!ok || !s.at_end()) return std::nullopt;
  return out;
}

}  // namespace

std::vector<SimCopy> decode_sim_copies(const std::string& text) {
  if (auto scanned = scan_copies(text)) return std::move(*scanned);
  return nlohmann::json::parse(text).get<std::vector<SimCopy>>();
}

namespace {

}  // namespace

std::shared_ptr<const void> SimBackend::release_world() {
  std::lock_guard lock(m_mutex);
  if (!m_store) return nullptr;
  auto world = std::make_shared<World>(std::move(m_world));
  m_world.clear();
  m_world_revision = 0;
  return world;
}

// Copy records per read of a full read of the world, for a store without a page size.
constexpr size_t k_sim_page = 8192;

bool SimBackend::load_world_file() {
  KeptChanges::Done done{m_file.kept_changes.get()};
  auto note = [&](const std::string& what) {
    if (m_file.note) m_file.note(fmt::format("world file {}: {}", m_file.path.string(), what));
  };
  auto refuse = [&](const std::string& why) {
    note(why + "; reading the store");
    return false;
  };
  std::string why;
  auto bytes = read_kept_file(m_file.path, &why);
  if (!bytes) return refuse(why);
  // The file's bulk decodes beside the store's answer to whether it may be used.
  auto decoded = std::async(worker_threads() > 1 ? std::launch::async : std::launch::deferred,
                            [&] { return decode_sim_world(*bytes, m_file.store_id); });
  std::expected<ChangesAfter, std::string> after = std::unexpected(std::string());
  if (auto head = peek_sim_world(*bytes))
    after = changes_after(*m_store, *head, std::span(&k_copies, 1), m_file.kept_changes.get());
  auto file = decoded.get();
  if (!file) return refuse(file.error());
  if (!after) return refuse(after.error());
  if (after->changes.size() > k_sim_max_replay)
    return refuse(fmt::format("{} copy changes since, more than {}", after->changes.size(), k_sim_max_replay));
  World world = std::move(file->world);
  for (const auto& e : after->changes) {
    std::string key = e.kv.key.substr(k_copies.size());
    if (e.type == EventType::Delete) {
      world.erase(key);
      continue;
    }
    try {
      world[key] = decode_sim_copies(e.kv.value);
    } catch (const std::exception&) {
      return refuse(fmt::format("the copy record {} written since does not decode", e.kv.key));  // A full read reports it.
    }
  }
  m_world = std::move(world);
  m_world_revision = after->head.revision;
  note(fmt::format("used, at revision {}; {} change(s) since read, {} of them applied", after->file_revision,
                   after->read, after->changes.size()));
  // Brought forward when it is far behind, not after every command, or with the state
  // file when that is written now (kept_file_due).
  if (kept_file_due(*after, m_file.kept_changes.get())) save_world_file(after->head);
  return true;
}

void SimBackend::save_world_file(std::optional<KeptFileHead> head) {
  m_file_saved = true;
  auto skip = [&](const std::string& why) {
    if (m_file.note) m_file.note(fmt::format("world file {}: not written: {}", m_file.path.string(), why));
  };
  size_t copies = 0;
  for (const auto& [key, list] : m_world) copies += list.size();
  if (m_world_revision <= 0) return;
  if (copies < m_file.min_copies)
    return skip(fmt::format("{} copies, fewer than {}, read faster from the store", copies, m_file.min_copies));
  // What the store shows at the world's revision; a store that moved on since, or keeps
  // no history hash, gets no file.
  if (!head) head = kept_head(*m_store, m_world_revision);
  if (!head || head->revision != m_world_revision)
    return skip(fmt::format("the store keeps no history hash, or not that of revision {} any more", m_world_revision));
  if (m_file.note) m_file.note(fmt::format("world file {}: writing, at revision {}", m_file.path.string(), m_world_revision));
  if (m_file.kept_changes) m_file.kept_changes->writing(m_world_revision);  // The state file follows.
  // Encoded here, as the kept world changes under m_mutex once this returns.
  auto bytes = std::make_shared<std::string>(encode_sim_world(m_file.store_id, *head, m_world));
  if (m_file_writer.valid()) m_file_writer.wait();
  m_file_writer = std::async(std::launch::async, [path = m_file.path, bytes] { write_kept_file(path, *bytes); });
}

BackendResult<SimBackend::World*> SimBackend::load_world() {
  if (!m_store) return &m_world;
  if (m_world_revision == 0 && !m_file_tried && !m_file.path.empty()) {
    m_file_tried = true;
    if (load_world_file()) return &m_world;
  }
  if (m_world_revision > 0) {
    auto current = m_store->revision();
    if (!current) return std::unexpected(from_store(current.error()));
    if (*current == m_world_revision) return &m_world;
    // A store behind the kept world was re-created or restored: read it afresh.
    if (*current > m_world_revision) {
      auto changes = m_store->changes_since(m_world_revision + 1, k_copies);
      if (changes && changes->size() <= k_sim_max_replay) {
        int64_t reached = *current;
        for (const auto& e : *changes) {
          std::string key = e.kv.key.substr(k_copies.size());
          reached = std::max(reached, e.revision());
          if (e.type == EventType::Delete) {
            m_world.erase(key);
            continue;
          }
          try {
            m_world[key] = decode_sim_copies(e.kv.value);
          } catch (const std::exception& ex) {
            m_world_revision = 0;
            return std::unexpected(corrupt_copy(e.kv.key, ex));
          }
        }
        m_world_revision = reached;
        return &m_world;
      }
      // Compacted history (or too much of it), or a failed read: a full read below
      // reports what is wrong with the store, if anything still is.
    }
  }
  m_world.clear();
  m_world_revision = 0;
  // In pages, all at the first one's revision: a store with one connection serves one
  // read at a time, and a command's own thread reads meanwhile when this runs ahead of
  // it (ops::ReadAhead).
  const size_t preferred = m_store->read_page_size();
  RangeRequest request = RangeRequest::prefix(k_copies, 0, preferred ? preferred : k_sim_page);
  // A later page's revision may be compacted meanwhile (or, after a restore, be ahead of
  // the store): the read starts over at the current revision, a few times at most.
  int restarts = 0;
  for (;;) {
    auto read = m_store->read(request);
    if (!read) {
      const auto code = read.error().code;
      if (request.revision != 0 && restarts < 5 &&
          (code == StoreErrc::Compacted || code == StoreErrc::FutureRevision)) {
        ++restarts;
        m_world.clear();
        request = RangeRequest::prefix(k_copies, 0, preferred ? preferred : k_sim_page);
        continue;
      }
      m_world.clear();
      return std::unexpected(from_store(read.error()));
    }
    for (const auto& kv : read->kvs) {
      try {
        m_world[kv.key.substr(k_copies.size())] = decode_sim_copies(kv.value);
      } catch (const std::exception& e) {
        m_world.clear();
        return std::unexpected(corrupt_copy(kv.key, e));
      }
    }
    request.revision = read->revision;
    if (!read->more || read->kvs.empty()) break;
    request.key = read->kvs.back().key + std::string(1, '\0');
  }
  m_world_revision = request.revision;
  if (!m_file.path.empty() && !m_file_saved) save_world_file(std::nullopt);
  return &m_world;
}

BackendResult<void> SimBackend::save(const World& world, const std::vector<std::string>& changed) {
  if (!m_store) {
    for (const auto& k : changed) {
      auto it = m_world.find(k);
      if (it != m_world.end() && it->second.empty()) m_world.erase(it);
    }
    return {};
  }
  if (changed.empty()) return {};
  Txn txn;
  for (const auto& k : changed) {
    auto it = world.find(k);
    if (it == world.end() || it->second.empty()) txn.deletes.push_back({copy_key(k)});
    else txn.puts.push_back({copy_key(k), nlohmann::json(it->second).dump()});
  }
  auto r = m_store->txn(txn);
  if (!r) {
    m_world_revision = 0;
    m_world.clear();
    return std::unexpected(from_store(r.error()));
  }
  // The kept world now holds this write too, so the next read need not decode it again;
  // it stays at its revision when another writer came in between, whose changes the
  // next read brings (this write's among them, decoded to what the world holds already).
  for (const auto& k : changed)
    if (auto it = m_world.find(k); it != m_world.end() && it->second.empty()) m_world.erase(it);
  if (!txn.puts.empty() && r->revision == m_world_revision + 1) m_world_revision = r->revision;
  return {};
}

BackendResult<SimUsageModel> SimBackend::usage_model() {
  if (!m_store) return m_usage;
  auto kv = m_store->get(k_usage);
  if (!kv) return std::unexpected(from_store(kv.error()));
  if (!*kv) return SimUsageModel{};
  try {
    return nlohmann::json::parse((*kv)->value).get<SimUsageModel>();
  } catch (const std::exception& e) {
    return std::unexpected(BackendError{BackendErrc::Unavailable, fmt::format("sim backend: corrupt {}: {}", k_usage, e.what())});
  }
}

BackendResult<void> SimBackend::set_usage_model(const SimUsageModel& model) {
  std::lock_guard lock(m_mutex);
  if (!m_store) {
    m_usage = model;
    return {};
  }
  Txn txn;
  if (model.empty()) txn.deletes.push_back({k_usage});
  else txn.puts.push_back({k_usage, nlohmann::json(model).dump()});
  auto r = m_store->txn(txn);
  if (!r) return std::unexpected(from_store(r.error()));
  return {};
}

void SimBackend::prefetch() {
  std::lock_guard lock(m_mutex);
  // A failed read leaves no world kept, and observe() reads again and reports it.
  (void)load_world();
}

BackendResult<Observation> SimBackend::observe(int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto loaded = load_world();
  if (!loaded) return std::unexpected(loaded.error());
  World& world = **loaded;
  auto model = m_store ? usage_model() : BackendResult<SimUsageModel>(m_usage);
  if (!model) return std::unexpected(model.error());
  Observation obs;
  // Room for one copy an instance and a few more, without counting them first: a walk
  // of the world's tree is a cache miss a step, and counting was half of observing.
  obs.copies.reserve(world.size() + world.size() / 16);
  advise_huge_pages(obs.copies);
  // Without rules no copy has a usage: no instance is built to ask the model.
  const bool modelled = !model->rules.empty();
  for (const auto& [key, copies] : world)
    for (const auto& c : copies) {
      ObservedCopy o;
      o.instance = key;
      o.node = c.node;
      o.generation = c.generation;
      o.phase = c.phase;
      o.exit_code = c.exit_code;
      o.reason = c.reason;
      o.internal = c.internal;
      o.started_ms = c.started_ms;
      if (modelled && c.phase == CopyPhase::Running) {
        Instance i;
        i.tenant = c.tenant;
        i.app = c.app;
        i.role = c.role;
        i.ordinal = c.ordinal;
        i.request = c.request;
        i.limit = c.limit;
        o.usage = model->usage_of(i, now_ms);
      }
      obs.copies.push_back(std::move(o));
    }
  obs.wake_at_ms = model->next_change_ms(now_ms);
  return obs;
}

BackendResult<std::vector<ActionResult>> SimBackend::start(const std::vector<StartSpec>& specs, int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto loaded = load_world();
  if (!loaded) return std::unexpected(loaded.error());
  World& world = **loaded;
  std::vector<ActionResult> out;
  std::vector<std::string> changed;
  for (const auto& s : specs) {
    const Instance& i = s.instance;
    std::string key = i.key();
    out.push_back({key, i.node, std::nullopt});
    auto& copies = world[key];
    bool exists = std::any_of(copies.begin(), copies.end(),
                              [&](const SimCopy& c) { return c.node == i.node && c.generation == i.generation; });
    if (exists) continue;  // Idempotent: that copy was started already.
    SimCopy c;
    c.node = i.node;
    c.generation = i.generation;
    c.phase = CopyPhase::Running;
    c.started_ms = now_ms;
    c.tenant = i.tenant;
    c.app = i.app;
    c.role = i.role;
    c.ordinal = i.ordinal;
    c.request = i.request;
    c.limit = i.limit;
    copies.push_back(std::move(c));
    changed.push_back(key);
  }
  if (auto r = save(world, changed); !r) return std::unexpected(r.error());
  return out;
}

BackendResult<std::vector<ActionResult>> SimBackend::stop(const std::vector<StopSpec>& specs, int64_t) {
  std::lock_guard lock(m_mutex);
  auto loaded = load_world();
  if (!loaded) return std::unexpected(loaded.error());
  World& world = **loaded;
  std::vector<ActionResult> out;
  std::vector<std::string> changed;
  for (const auto& s : specs) {
    out.push_back({s.instance, s.node, std::nullopt});
    auto it = world.find(s.instance);
    if (it == world.end()) continue;  // Gone already: stopped.
    auto before = it->second.size();
    std::erase_if(it->second, [&](const SimCopy& c) { return c.node == s.node && c.generation == s.generation; });
    if (it->second.size() != before) changed.push_back(s.instance);
  }
  if (auto r = save(world, changed); !r) return std::unexpected(r.error());
  return out;
}

bool SimBackend::wait(std::chrono::milliseconds timeout) {
  // Nothing happens in the sim between calls but time: a usage spike ending, which the
  // caller already knows of from Observation::wake_at_ms.
  std::this_thread::sleep_for(std::min(timeout, std::chrono::milliseconds(50)));
  return false;
}

BackendResult<void> SimBackend::end_copy(const std::string& instance, int exit_code, const std::string& reason,
                                         bool internal) {
  std::lock_guard lock(m_mutex);
  auto loaded = load_world();
  if (!loaded) return std::unexpected(loaded.error());
  World& world = **loaded;
  auto it = world.find(instance);
  SimCopy* live = nullptr;
  if (it != world.end())
    for (auto& c : it->second)
      if (c.phase == CopyPhase::Running || c.phase == CopyPhase::Starting) live = &c;
  if (!live) return std::unexpected(BackendError{BackendErrc::NotFound, fmt::format("no copy of {} runs", instance)});
  live->phase = reason.empty() ? CopyPhase::Exited : CopyPhase::Failed;
  if (exit_code != 0) live->phase = CopyPhase::Exited;
  live->exit_code = exit_code;
  live->reason = reason;
  live->internal = internal;
  return save(world, {instance});
}

BackendResult<void> SimBackend::lose_copy(const std::string& instance) {
  std::lock_guard lock(m_mutex);
  auto loaded = load_world();
  if (!loaded) return std::unexpected(loaded.error());
  World& world = **loaded;
  auto it = world.find(instance);
  if (it == world.end() || it->second.empty())
    return std::unexpected(BackendError{BackendErrc::NotFound, fmt::format("no copy of {} runs", instance)});
  it->second.clear();
  return save(world, {instance});
}

void SimBackend::seed(const std::map<std::string, std::vector<SimCopy>>& copies) {
  std::lock_guard lock(m_mutex);
  m_world = copies;
}

}  // namespace gaia
