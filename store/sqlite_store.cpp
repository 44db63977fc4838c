#include "store/sqlite_store.hpp"
#include "store/sqlite_checkpointer.hpp"

#include <sys/stat.h>

#include <array>
#include <fmt/ranges.h>
#include <map>
#include <stdexcept>

#include "store/sqlite_detail.hpp"

namespace gaia {

using namespace sqlite_detail;

namespace {

// Schema migrations: kMigrations[i] takes a store from user_version i to i + 1. Append
// new entries; never edit a released one, since stores in the field already ran it.
constexpr std::array<std::string_view, 2> kMigrations = {
    R"sql(
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('revision', 0), ('compact_revision', 0);
CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  mod_revision INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX kv_by_lease ON kv(lease) WHERE lease != 0;
CREATE TABLE changes (
  revision INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  PRIMARY KEY (revision, seq)
) WITHOUT ROWID;
-- AUTOINCREMENT: a lease id is never reused, so a holder whose lease expired cannot
-- mistake someone else's new lease for its own.
CREATE TABLE leases (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ttl_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX leases_by_expiry ON leases(expires_at_ms);
)sql",
    // 2: every change records the key's state before it, so a read at a past revision
    // can rebuild the keys as they were (etcd's MVCC). Older changes lack it, so history
    // before the upgrade is compacted away. A rowid table now: a WITHOUT ROWID row over
    // ~1000 bytes (two 500-byte values) takes an overflow page of its own, 3x slower and
    // 4x larger. No index on (key, revision): past reads find the few changes after their
    // revision by revision, and every write would pay for it. An index of the keys, as a
    // limited read counts its whole range: a few hundred pages instead of every value.
    R"sql(
CREATE TABLE changes_v2 (
  revision INTEGER NOT NULL, seq INTEGER NOT NULL, type INTEGER NOT NULL, key TEXT NOT NULL,
  value TEXT NOT NULL, create_revision INTEGER NOT NULL, version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  -- The key before the change; prev_exists = 0 when the change created it.
  prev_exists INTEGER NOT NULL, prev_value TEXT NOT NULL, prev_create_revision INTEGER NOT NULL,
  prev_mod_revision INTEGER NOT NULL, prev_version INTEGER NOT NULL, prev_lease INTEGER NOT NULL,
  PRIMARY KEY (revision, seq)
);
INSERT INTO changes_v2
  SELECT revision, seq, type, key, value, create_revision, version, lease, 0, '', 0, 0, 0, 0
  FROM changes WHERE revision >= (SELECT value FROM meta WHERE name = 'revision');
DROP TABLE changes;
ALTER TABLE changes_v2 RENAME TO changes;
UPDATE meta SET value = (SELECT value FROM meta WHERE name = 'revision')
  WHERE name = 'compact_revision';
CREATE INDEX kv_keys ON kv(key);
)sql",
};
static_assert(kMigrations.size() == SqliteStore::kSchemaVersion);

// The condition a request's range puts on `key`, with its parameters numbered from
// `first`; bind_range() binds them.
std::string range_clause(const RangeRequest& r, int first) {
  if (r.range_end.empty()) return fmt::format("key = ?{}", first);
  if (r.range_end == std::string_view("\0", 1)) return fmt::format("key >= ?{}", first);
  return fmt::format("key >= ?{} AND key < ?{}", first, first + 1);
}
void bind_range(Statement& s, const RangeRequest& r, int first) {
  s.bind(first, r.key);
  if (!r.range_end.empty() && r.range_end != std::string_view("\0", 1)) s.bind(first + 1, r.range_end);
}

constexpr std::string_view kKvColumns = "key, value, create_revision, mod_revision, version, lease";

KeyValue read_kv_row(const Statement& s) {
  return KeyValue{s.text(0), s.text(1), s.integer(2), s.integer(3), s.integer(4), s.integer(5)};
}

std::optional<KeyValue> read_key(SqliteConnection& db, std::string_view key) {
  Statement s(db, fmt::format("SELECT {} FROM kv WHERE key = ?1", kKvColumns));
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  return read_kv_row(s);
}

// A read at revision R, the current one or a past one the caller has checked is still
// retained: a key's state at R is the state before its first change after R when it has
// one, else its live row. The changes after R are few when R is recent (the usual case:
// later pages of a read that a writer overtook), and the primary key finds them without
// scanning older ones; at the current revision there are none to look for, and the read
// is the live table's rows alone.
RangeResponse read_at(SqliteConnection& db, const RangeRequest& r, int64_t revision, int64_t current) {
  struct Changed {
    std::optional<KeyValue> at;  // The key at R.
    bool exists_now = false;     // Whether its latest change is a put (it has a live row).
  };
  std::map<std::string, Changed, std::less<>> changed;
  if (revision < current) {
    Statement s(db, fmt::format("SELECT key, type, prev_exists, prev_value, prev_create_revision,"
                                " prev_mod_revision, prev_version, prev_lease FROM changes"
                                " WHERE revision > ?3 AND {} ORDER BY revision, seq",
                                range_clause(r, 1)));
    bind_range(s, r, 1);
    s.bind(3, revision);
    while (s.step()) {
      auto [it, first] = changed.try_emplace(s.text(0));
      if (first && s.integer(2) != 0)
        it->second.at = KeyValue{it->first, r.keys_only || r.count_only ? std::string() : s.text(3),
                                 s.integer(4), s.integer(5), s.integer(6), s.integer(7)};
      it->second.exists_now = s.integer(1) == 0;
    }
  }
  // The live count corrected by the changed keys, so no page of a long range has to walk
  // the rest of it; the count goes through the index of keys, not the values.
  auto count = [&] {
    Statement s(db, "SELECT COUNT(*) FROM kv WHERE " + range_clause(r, 1));
    bind_range(s, r, 1);
    s.step();
    int64_t n = s.integer(0);
    for (const auto& [key, c] : changed) n += (c.at ? 1 : 0) - (c.exists_now ? 1 : 0);
    return n;
  };
  RangeResponse out;
  out.revision = revision;
  if (r.count_only) {
    out.count = count();
    return out;
  }
  size_t room = r.limit > 0 ? r.limit : SIZE_MAX;
  // Merge the live rows (minus the changed keys) with the changed keys' states at R,
  // both in key order. At most changed.size() live rows are skipped, so that many past
  // the limit are enough.
  auto next_changed = changed.begin();
  auto take_changed_before = [&](const std::string* key) {
    for (; next_changed != changed.end() && (!key || next_changed->first < *key); ++next_changed)
      if (next_changed->second.at && out.kvs.size() < room) out.kvs.push_back(*next_changed->second.at);
  };
  Statement s(db, fmt::format("SELECT key, {}, create_revision, mod_revision, version, lease FROM kv"
                              " WHERE {} ORDER BY key LIMIT ?3",
                              r.keys_only ? "''" : "value", range_clause(r, 1)));
  bind_range(s, r, 1);
  s.bind(3, r.limit > 0 ? static_cast<int64_t>(r.limit + changed.size()) : int64_t{-1});
  while (out.kvs.size() < room && s.step()) {
    std::string key = s.text(0);
    take_changed_before(&key);
    if (out.kvs.size() < room && !changed.contains(key)) out.kvs.push_back(read_kv_row(s));
  }
  take_changed_before(nullptr);
  // Only a full page may have left keys out.
  out.count = out.kvs.size() == room ? count() : static_cast<int64_t>(out.kvs.size());
  out.more = out.count > static_cast<int64_t>(out.kvs.size());
  return out;
}

bool lease_exists(SqliteConnection& db, int64_t lease) {
  Statement s(db, "SELECT 1 FROM leases WHERE id = ?1");
  s.bind(1, lease);
  return s.step();
}

void compact_to(SqliteConnection& db, int64_t revision) {
  Statement s(db, "DELETE FROM changes WHERE revision < ?1");
  s.bind(1, revision).run();
  write_meta(db, "compact_revision", revision);
}

// Applies the changes of one revision and logs each to the change table.
// A `lean` writer is for a full disk: the history before the current revision goes first,
// freeing its pages for the writes, and the changes are logged without the previous
// values; finish() then compacts to the new revision, so no read can ask for a state
// before it (reads there need those values) and followers read afresh.
class RevisionWriter {
 public:
  explicit RevisionWriter(SqliteConnection& db, bool lean = false)
      : m_db(db), m_revision(read_meta(db, "revision") + 1), m_lean(lean) {
    if (m_lean) compact_to(m_db, m_revision - 1);
    // The history hash this revision chains onto (Store::history_mark); every opener
    // that may write makes sure the store has one.
    Statement s(m_db, "SELECT value FROM meta WHERE name = 'history_hash'");
    if (s.step()) m_chain.emplace(static_cast<uint64_t>(s.integer(0)), m_revision);
  }

  void put(const Put& p) {
    KeyValue kv{p.key, p.value, m_revision, m_revision, 1, p.lease};
    std::optional<KeyValue> prev = read_key(m_db, p.key);
    if (prev) {
      kv.create_revision = prev->create_revision;
      kv.version = prev->version + 1;
    }
    Statement s(m_db, fmt::format("INSERT OR REPLACE INTO kv ({}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                                  kKvColumns));
    s.bind(1, kv.key).bind(2, kv.value).bind(3, kv.create_revision).bind(4, kv.mod_revision);
    s.bind(5, kv.version).bind(6, kv.lease).run();
    log(EventType::Put, kv, prev);
  }

  void remove(const std::string& key) {
    std::optional<KeyValue> prev = read_key(m_db, key);
    if (!prev) return;
    Statement s(m_db, "DELETE FROM kv WHERE key = ?1");
    s.bind(1, key).run();
    log(EventType::Delete, KeyValue{key, "", 0, m_revision, 0, 0}, prev);
  }

  void remove_matching(const Delete& d) {
    if (!d.prefix) return remove(d.key);
    for (const auto& key : keys_with_prefix(d.key)) remove(key);
  }

  void remove_lease_keys(int64_t lease) {
    std::vector<std::string> keys;
    {
      Statement s(m_db, "SELECT key FROM kv WHERE lease = ?1 ORDER BY key");
      s.bind(1, lease);
      while (s.step()) keys.push_back(s.text(0));
    }
    for (const auto& key : keys) remove(key);
  }

  // Records the new revision if anything changed and trims history to the newest
  // `history_revisions` revisions. Returns the store's revision afterwards.
  int64_t finish(int64_t history_revisions) {
    if (!m_changed) return m_revision - 1;
    write_meta(m_db, "revision", m_revision);
    if (m_chain) {
      const auto hash = static_cast<int64_t>(m_chain->digest());
      write_meta(m_db, "history_hash", hash);
      // And in a ring of the last revisions' hashes, so a reader that read the state at
      // one of them can still learn the hash there after others committed.
      const int64_t slot = m_revision % Store::k_history_kept;
      Statement s(m_db, "INSERT OR REPLACE INTO meta VALUES (?1, ?2), (?3, ?4)");
      s.bind(1, fmt::format("history_rev:{}", slot)).bind(2, m_revision);
      s.bind(3, fmt::format("history_hash:{}", slot)).bind(4, hash).run();
    }
    if (m_lean) {
      compact_to(m_db, m_revision);
    } else if (history_revisions > 0) {
      int64_t keep_from = m_revision - history_revisions + 1;
      if (keep_from > read_meta(m_db, "compact_revision")) compact_to(m_db, keep_from);
    }
    return m_revision;
  }
  bool changed() const { return m_changed; }

 private:
  std::vector<std::string> keys_with_prefix(std::string_view prefix) {
    RangeRequest range = RangeRequest::prefix(prefix);
    Statement s(m_db, "SELECT key FROM kv WHERE " + range_clause(range, 1) + " ORDER BY key");
    bind_range(s, range, 1);
    std::vector<std::string> keys;
    while (s.step()) keys.push_back(s.text(0));
    return keys;
  }

  // Logs one change with the key's state before it (`prev`, absent when the change
  // created the key), which is what a read at an earlier revision returns.
  void log(EventType type, const KeyValue& kv, const std::optional<KeyValue>& prev) {
    Statement s(m_db,
                "INSERT INTO changes (revision, seq, type, key, value, create_revision, version,"
                " lease, prev_exists, prev_value, prev_create_revision, prev_mod_revision,"
                " prev_version, prev_lease)"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    s.bind(1, m_revision).bind(2, m_seq++).bind(3, int64_t{type == EventType::Put ? 0 : 1});
    s.bind(4, kv.key).bind(5, kv.value).bind(6, kv.create_revision).bind(7, kv.version);
    s.bind(8, kv.lease).bind(9, int64_t{prev && !m_lean ? 1 : 0});
    KeyValue before = m_lean ? KeyValue{} : prev.value_or(KeyValue{});
    s.bind(10, before.value).bind(11, before.create_revision).bind(12, before.mod_revision);
    s.bind(13, before.version).bind(14, before.lease).run();
    // As changes_since will list it: a delete carries only its key.
    if (m_chain) m_chain->add(type, kv);
    m_changed = true;
  }

  SqliteConnection& m_db;
  int64_t m_revision;
  bool m_lean;
  int64_t m_seq = 0;
  bool m_changed = false;
  std::optional<HistoryChain> m_chain;
};

// Deletes the keys of every lease whose deadline has passed, all at one new revision.
void expire_leases(SqliteConnection& db, int64_t now_ms, int64_t history_revisions) {
  std::vector<int64_t> expired;
  {
    Statement s(db, "SELECT id FROM leases WHERE expires_at_ms <= ?1 ORDER BY id");
    s.bind(1, now_ms);
    while (s.step()) expired.push_back(s.integer(0));
  }
  if (expired.empty()) return;
  RevisionWriter writer(db);
  for (int64_t lease : expired) {
    writer.remove_lease_keys(lease);
    Statement s(db, "DELETE FROM leases WHERE id = ?1");
    s.bind(1, lease).run();
  }
  writer.finish(history_revisions);
}

// Brings the schema to kSchemaVersion in one transaction, so a crash mid-way leaves the
// old version intact and a concurrent opener sees either the old or the new schema.
void migrate(SqliteConnection& db, const std::filesystem::path& path) {
  auto user_version = [&] {
    Statement s(db, "PRAGMA user_version");
    s.step();
    return s.integer(0);
  };
  if (user_version() == SqliteStore::kSchemaVersion) return;
  exec(db, "BEGIN IMMEDIATE");
  try {
    int64_t version = user_version();  // Re-read under the lock: another opener may have won.
    if (version > SqliteStore::kSchemaVersion)
      throw_request(StoreErrc::SchemaTooNew,
                    fmt::format("store '{}' has schema version {}, but this gaia only knows "
                                "versions up to {}: it was written by a newer gaia",
                                path.string(), version, SqliteStore::kSchemaVersion),
                    "upgrade gaia, or use a different store path");
    if (version == 0) {
      Statement s(db, "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' LIMIT 1");
      if (s.step())
        throw_request(StoreErrc::Corrupt,
                      fmt::format("'{}' is an SQLite database but not a gaia store (it has a "
                                  "table or index '{}')",
                                  path.string(), s.text(0)),
                      "point gaia at a new store path; gaia will not modify this file");
    }
    for (int64_t v = version; v < SqliteStore::kSchemaVersion; ++v) exec(db, kMigrations[v]);
    exec(db, fmt::format("PRAGMA user_version = {}", SqliteStore::kSchemaVersion));
    exec(db, "COMMIT");
  } catch (...) {
    rollback_quietly(db);
    throw;
  }
}

}  // namespace

StoreResult<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::filesystem::path& path,
                                                            SqliteStoreOptions options) {
  namespace fs = std::filesystem;
  auto io_error = [&](std::string message, std::string hint = {}) {
    return std::unexpected(StoreError{StoreErrc::Io, std::move(message), std::move(hint), 0});
  };
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return io_error(fmt::format("store path '{}' is a directory, not a file", path.string()),
                    fmt::format("name a file inside it, e.g. '{}'", (path / "gaia.db").string()));
  const bool create = options.create && !options.read_only;
  if (!create && !fs::exists(path, ec))
    return io_error(fmt::format("no store at '{}'", path.string()), "check the path; a new store must be created");
  fs::path parent = path.parent_path();
  if (create && !parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec)
      return io_error(fmt::format("cannot create directory '{}' for the store: {}",
                                  parent.string(), ec.message()));
  }
  if (!options.clock) options.clock = std::make_shared<SystemClock>();

  sqlite3* handle = nullptr;
  int flags = options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  auto db = std::make_unique<SqliteConnection>(handle);  // Closes the handle in any case.
  if (rc != SQLITE_OK)
    return io_error(fmt::format("cannot open store '{}': {}", path.string(),
                                handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc)));
  sqlite3_extended_result_codes(handle, 1);
  sqlite3_busy_timeout(handle, static_cast<int>(options.busy_timeout.count()));
  if (options.reserve_bytes > 0 && !options.read_only) {
    // The -wal and -shm files stay between uses (with the room they took), so opening
    // and the first writes on a full disk need no new room.
    int persist = 1;
    sqlite3_file_control(handle, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    // But empty: a persistent WAL that the last connection's closing checkpoint copied
    // into the database still holds valid frames, so every later process recovered it
    // (read it whole) and its closing checkpoint copied and synced it again. After a
    // submit that is megabytes and three fsyncs per command, even `gaia get`; after a
    // commit of 10,000 instances, 300 MB and half a second. With a size limit, that last
    // checkpoint truncates the WAL to nothing instead (sqlite3WalClose); the reserve
    // file, not the WAL's blocks, is the room a full disk's first write gets.
    sqlite3_exec(handle, "PRAGMA journal_size_limit = 67108864", nullptr, nullptr, nullptr);
  }

  auto user_version = [&] {
    Statement s(*db, "PRAGMA user_version");
    s.step();
    return s.integer(0);
  };
  auto configured = retry_busy(path, options.busy_timeout, [&] {
    // The schema version is the first read of the file, so a file that is not a
    // database fails here with SQLITE_NOTADB, and an empty one is refused before
    // anything (turning on WAL) writes to it.
    int64_t version = user_version();
    if (!create && version == 0) {
      Statement tables(*db, "SELECT 1 FROM sqlite_master LIMIT 1");
      if (!tables.step())
        throw_request(StoreErrc::Io, fmt::format("'{}' is an empty file, not a gaia store", path.string()),
                      "check the path; a new store must be created");
    }
    {
      // Scoped: a statement left pending would make the migration's COMMIT fail. A
      // read-only store is read in whatever mode it was left (a backup copy is not in
      // WAL mode).
      Statement wal(*db, options.read_only ? "PRAGMA journal_mode" : "PRAGMA journal_mode = WAL");
      if (!wal.step() || (!options.read_only && wal.text(0) != "wal"))
        throw SqlFailure{SQLITE_IOERR, "the store cannot use write-ahead logging (WAL)"};
    }
    if (options.read_only) {
      if (version > kSchemaVersion)
        throw_request(StoreErrc::SchemaTooNew,
                      fmt::format("store '{}' has schema version {}, but this gaia only knows versions up to {}",
                                  path.string(), version, kSchemaVersion),
                      "upgrade gaia, or use a different store path");
      if (version < kSchemaVersion)
        throw_request(StoreErrc::Io,
                      fmt::format("store '{}' has the older schema version {} and is read-only here, so it "
                                  "cannot be upgraded to version {}",
                                  path.string(), version, kSchemaVersion),
                      "open it once with write permission (any gaia command upgrades it)");
      return true;
    }
    exec(*db, options.synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    migrate(*db, path);
    // The store's identity (Store::identity): a random number, made by the first opener
    // that may write. A row of meta, which every gaia of this schema ignores, rather
    // than a new schema version, so a store stays readable by the gaia before this one.
    // Of two openers at once, one inserts and the other's insert is ignored.
    // Likewise the start of its history hash (Store::history_mark), random so two copies
    // of a store that an older gaia wrote to start chains of their own.
    for (std::string_view name : {"store_id", "history_hash"}) {
      bool present = false;
      {
        Statement find(*db, "SELECT 1 FROM meta WHERE name = ?1");
        find.bind(1, name);
        present = find.step();
      }
      if (!present)
        Statement(*db, "INSERT OR IGNORE INTO meta VALUES (?1, random() & 9223372036854775807)").bind(1, name).run();
    }
    return true;
  });
  if (!configured) return std::unexpected(configured.error());
  std::unique_ptr<SqliteStore> store(new SqliteStore(std::move(db), path, std::move(options)));
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    store->m_device = st.st_dev;
    store->m_inode = st.st_ino;
  }
  store->keep_reserve();
  return store;
}

SqliteStore::SqliteStore(std::unique_ptr<SqliteConnection> connection, std::filesystem::path path,
                         SqliteStoreOptions options)
    : m_connection(std::move(connection)),
      m_db(*m_connection),
      m_path(std::move(path)),
      m_options(std::move(options)) {
  if (m_options.background_checkpoint && !m_options.read_only) {
    m_checkpointer = std::make_unique<SqliteCheckpointer>(m_path, m_options.synchronous_full);
    m_checkpointer->connect();  // Failing, commits checkpoint inline (on_wal_commit).
    // Replaces SQLite's own checkpoint-on-commit (which is a WAL hook too).
    sqlite3_wal_hook(m_db.handle, &SqliteStore::on_wal_commit, this);
  }
}

SqliteStore::~SqliteStore() {
  // The checkpointer first: the store's connection must be the last to close, so its
  // closing checkpoint copies what is left and empties the WAL.
  if (m_checkpointer) sqlite3_wal_hook(m_db.handle, nullptr, nullptr);
  m_checkpointer.reset();
}

int SqliteStore::on_wal_commit(void* store, sqlite3* db, const char* name, int pages) {
  auto* self = static_cast<SqliteStore*>(store);
  if (pages < SqliteCheckpointer::k_pages) return SQLITE_OK;
  if (pages < SqliteCheckpointer::k_limit_pages && self->m_checkpointer->request()) return SQLITE_OK;
  // The WAL starts over only once a checkpoint has copied all of it, and one in the
  // background copies only what was committed when it began: under back-to-back
  // commits it may never catch up, and the WAL would grow until the disk is full. Past
  // the limit, this commit waits for it and copies the rest itself, as SQLite's own
  // hook does (also when the background cannot run at all), so the next commit starts
  // the WAL over. A failed checkpoint leaves the frames in the WAL for the next one, so
  // its result is not the commit's.
  self->m_checkpointer->wait_idle();
  sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  return SQLITE_OK;
}

int64_t SqliteStore::wait_for_checkpoints() {
  if (!m_checkpointer) return 0;
  m_checkpointer->wait_idle();
  return m_checkpointer->runs();
}

int64_t SqliteStore::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             m_options.clock->now().time_since_epoch())
      .count();
}

template <class F>
auto SqliteStore::read_transaction(F&& body) -> StoreResult<decltype(body())> {
  using T = decltype(body());
  // Expiring is a write: a read-only store, or one whose disk is full, is read with the
  // keys of expired leases still in it (the next writer removes them).
  bool expire = !m_options.read_only;
  for (;;) {
    int64_t now = now_ms();
    auto result = in_transaction(false, [&]() -> std::optional<T> {
      if (expire) {
        Statement due(m_db, "SELECT 1 FROM leases WHERE expires_at_ms <= ?1 LIMIT 1");
        due.bind(1, now);
        if (due.step()) return std::nullopt;
      }
      return body();
    });
    if (!result) return std::unexpected(result.error());
    if (*result) return std::move(**result);
    // Some lease is past its deadline: delete its keys (a write, at a new revision)
    // and read again.
    int code = 0;
    auto expired = in_transaction(
        true,
        [&] {
          expire_leases(m_db, now, m_options.history_revisions);
          return true;
        },
        &code);
    if (!expired && code == SQLITE_FULL) expire = false;
    else if (!expired) return std::unexpected(expired.error());
  }
}

StoreResult<RangeResponse> SqliteStore::read(const RangeRequest& request) {
  if (request.revision < 0)
    return std::unexpected(StoreError{
        StoreErrc::InvalidArgument, fmt::format("cannot read at revision {}; revisions are >= 0", request.revision),
        "", 0});
  return read_transaction([&] {
    int64_t current = read_meta(m_db, "revision");
    if (request.revision > current)
      throw_request(StoreErrc::FutureRevision,
                    fmt::format("cannot read at revision {}: the current revision is {}", request.revision, current));
    int64_t revision = request.revision == 0 ? current : request.revision;
    int64_t compacted = revision < current ? read_meta(m_db, "compact_revision") : 0;
    if (revision < compacted)
      throw_request(StoreErrc::Compacted,
                    fmt::format("revision {} has been compacted; oldest available is {}", revision, compacted),
                    "read at the current revision (0) instead", compacted);
    return read_at(m_db, request, revision, current);
  });
}

StoreResult<int64_t> SqliteStore::revision() {
  return read_transaction([&] { return read_meta(m_db, "revision"); });
}

namespace {
// Debian's SQLite zeroes every page a delete frees (secure_delete = 1), which writes the
// freed pages out again: on a full disk, the very room a delete needs. While one lean
// commit runs, deleted content is still zeroed on the pages it writes anyway, but freed
// pages are left as they are (FAST); the connection's setting comes back afterwards.
class FastSecureDelete {
 public:
  explicit FastSecureDelete(SqliteConnection& db) : m_db(db) {
    Statement s(m_db, "PRAGMA secure_delete");
    m_before = s.step() ? s.integer(0) : 0;
    exec(m_db, "PRAGMA secure_delete = FAST");
  }
  ~FastSecureDelete() {
    std::string sql = fmt::format("PRAGMA secure_delete = {}", m_before == 2 ? "FAST" : m_before ? "ON" : "OFF");
    sqlite3_exec(m_db.handle, sql.c_str(), nullptr, nullptr, nullptr);
  }
  FastSecureDelete(const FastSecureDelete&) = delete;
  FastSecureDelete& operator=(const FastSecureDelete&) = delete;

 private:
  SqliteConnection& m_db;
  int64_t m_before = 0;
};
}  // namespace

TxnResult SqliteStore::apply_txn(const Txn& txn, int64_t now, bool lean) {
  std::optional<FastSecureDelete> fast;
  if (lean) fast.emplace(m_db);
  expire_leases(m_db, now, m_options.history_revisions);
  int64_t current = read_meta(m_db, "revision");
  for (const auto& c : txn.compares) {
    Statement s(m_db, "SELECT mod_revision FROM kv WHERE key = ?1");
    s.bind(1, c.key);
    int64_t actual = s.step() ? s.integer(0) : 0;
    if (actual != c.mod_revision) return TxnResult{false, current};
  }
  for (const auto& p : txn.puts)
    if (p.lease != 0 && !lease_exists(m_db, p.lease))
      throw_request(StoreErrc::LeaseNotFound,
                    fmt::format("cannot attach '{}' to lease {}: the lease has expired or "
                                "does not exist",
                                p.key, p.lease),
                    "grant a new lease and retry");
  RevisionWriter writer(m_db, lean);
  for (const auto& d : txn.deletes) writer.remove_matching(d);
  for (const auto& p : txn.puts) writer.put(p);
  return TxnResult{true, writer.finish(m_options.history_revisions)};
}

StoreResult<bool> SqliteStore::frees_space(const Txn& txn) {
  // Bytes, not characters: length() of a BLOB counts bytes.
  return in_transaction(false, [&] {
    int64_t added = 0;
    for (const auto& d : txn.deletes) {
      // An empty range end names the one key.
      RangeRequest range = d.prefix ? RangeRequest::prefix(d.key) : RangeRequest::interval(d.key, "");
      Statement s(m_db, "SELECT TOTAL(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))) FROM kv WHERE " +
                            range_clause(range, 1));
      bind_range(s, range, 1);
      if (s.step()) added -= static_cast<int64_t>(sqlite3_column_double(s.handle(), 0));
    }
    for (const auto& p : txn.puts) {
      added += static_cast<int64_t>(p.key.size() + p.value.size());
      Statement s(m_db, "SELECT length(CAST(key AS BLOB)) + length(CAST(value AS BLOB)) FROM kv WHERE key = ?1");
      s.bind(1, p.key);
      if (s.step()) added -= s.integer(0);
    }
    return added <= 0;
  });
}

StoreResult<TxnResult> SqliteStore::txn(const Txn& txn) {
  if (auto invalid = validate_txn(txn)) return std::unexpected(std::move(*invalid));
  int64_t now = now_ms();
  int code = 0;
  auto result = in_transaction(true, [&] { return apply_txn(txn, now, false); }, &code);
  if (result || code != SQLITE_FULL) return result;
  // The disk is full. A transaction that gives back at least the room it takes (a
  // delete, retention, a quarantine move) must still go through, or there is no way
  // out: it gets the reserve and commits lean (RevisionWriter). Others fail as they did.
  auto frees = frees_space(txn);
  if (!frees || !*frees) return result;
  // A background checkpoint still copying could take the room the reserve gives back.
  if (m_checkpointer) m_checkpointer->wait_idle();
  std::error_code ec;
  std::filesystem::remove(reserve_path(), ec);
  return in_transaction(true, [&] { return apply_txn(txn, now, true); });
}

StoreResult<std::vector<Event>> SqliteStore::changes_at(int64_t revision, size_t limit) {
  return read_transaction([&] {
    int64_t compacted = read_meta(m_db, "compact_revision");
    if (revision < compacted)
      throw_request(StoreErrc::Compacted,
                    fmt::format("revision {} has been compacted; oldest available is {}", revision, compacted),
                    "re-read the current state and follow changes from its revision", compacted);
    std::vector<Event> events;
    auto read = [&](std::string_view order, std::optional<int64_t> after_seq) {
      // By the primary key (revision, seq): only the rows asked for are read.
      std::string sql = fmt::format(
          "SELECT type, key, value, create_revision, version, lease, seq FROM changes WHERE revision = ?1{}"
          " ORDER BY seq {}",
          after_seq ? " AND seq > ?2" : "", order);
      if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
      Statement s(m_db, sql);
      s.bind(1, revision);
      if (after_seq) s.bind(2, *after_seq);
      std::vector<std::pair<int64_t, Event>> rows;
      while (s.step()) {
        Event e;
        e.type = s.integer(0) == 0 ? EventType::Put : EventType::Delete;
        e.kv = KeyValue{s.text(1), s.text(2), s.integer(3), revision, s.integer(4), s.integer(5)};
        rows.emplace_back(s.integer(6), std::move(e));
      }
      return rows;
    };
    auto first = read("ASC", std::nullopt);
    for (auto& [seq, e] : first) events.push_back(std::move(e));
    if (limit > 0 && first.size() == limit) {
      // The last ones, past those already read, in order.
      auto last = read("DESC", first.back().first);
      for (auto it = last.rbegin(); it != last.rend(); ++it) events.push_back(std::move(it->second));
    }
    return events;
  });
}

StoreResult<std::optional<HistoryMark>> SqliteStore::history_mark(int64_t revision) {
  return read_transaction([&] {
    const int64_t current = read_meta(m_db, "revision");
    std::optional<HistoryMark> out;
    if (revision == 0 || revision == current) {
      // The hash is the current revision's only when that revision's commit chained it
      // on, and left it in the ring: a commit of a gaia that does not chain (an older
      // build writing the same store) moved the revision and left the hash as it was.
      Statement s(m_db, "SELECT name, value FROM meta WHERE name IN ('history_hash', ?1)");
      s.bind(1, fmt::format("history_rev:{}", current % k_history_kept));
      std::optional<int64_t> at, hash;
      while (s.step()) (s.text(0) == "history_hash" ? hash : at) = s.integer(1);
      if (hash && (at == current || current == 0)) out = HistoryMark{current, static_cast<uint64_t>(*hash)};
      return out;
    }
    // An earlier revision's, from the ring the last commits left (RevisionWriter::finish).
    if (revision > current || revision <= current - k_history_kept) return out;
    const int64_t slot = revision % k_history_kept;
    const std::string rev_name = fmt::format("history_rev:{}", slot);
    Statement s(m_db, "SELECT name, value FROM meta WHERE name IN (?1, ?2)");
    s.bind(1, rev_name).bind(2, fmt::format("history_hash:{}", slot));
    std::optional<int64_t> at, hash;
    while (s.step()) (s.text(0) == rev_name ? at : hash) = s.integer(1);
    if (at == revision && hash) out = HistoryMark{revision, static_cast<uint64_t>(*hash)};
    return out;
  });
}

StoreResult<bool> SqliteStore::history_chained(int64_t after, int64_t upto) {
  return read_transaction([&] {
    const int64_t current = read_meta(m_db, "revision");
    if (after < 0 || upto < after || upto > current || after < current - k_history_kept) return false;
    if (upto == after) return true;
    // A revision has one slot (revision % k_history_kept), so the ring holds each at most
    // once: all are there when as many are found as asked for.
    Statement s(m_db,
                "SELECT COUNT(*) FROM meta WHERE name LIKE 'history_rev:%' AND CAST(value AS INTEGER) > ?1"
                " AND CAST(value AS INTEGER) <= ?2");
    s.bind(1, after).bind(2, upto);
    return s.step() && s.integer(0) == upto - after;
  });
}

StoreResult<std::string> SqliteStore::identity() {
  return read_transaction([&] {
    Statement s(m_db, "SELECT value FROM meta WHERE name = 'store_id'");
    return s.step() ? fmt::format("sqlite:{:016x}", static_cast<uint64_t>(s.integer(0))) : std::string();
  });
}

namespace {

// The changes from `from_revision` on of the keys in `range` (or, `outside`, of every
// key but those), in revision order; with a limit, the last revision is finished, so a
// caller never sees half a transaction.
std::vector<Event> read_changes(SqliteConnection& db, int64_t from_revision, const RangeRequest& range, bool outside,
                                size_t limit) {
  int64_t compacted = read_meta(db, "compact_revision");
  if (from_revision < compacted)
    throw_request(StoreErrc::Compacted,
                  fmt::format("revision {} has been compacted; oldest available is {}", from_revision, compacted),
                  "re-read the current state and follow changes from its revision", compacted);
  // The range's condition, with its parameters numbered from `first`.
  auto clause = [&](int first) {
    return outside ? fmt::format("NOT ({})", range_clause(range, first)) : range_clause(range, first);
  };
  constexpr std::string_view kColumns = "revision, seq, type, key, value, create_revision, version, lease";
  std::vector<Event> events;
  int64_t last_seq = -1;
  auto read_rows = [&](Statement& s) {
    while (s.step()) {
      Event e;
      e.type = s.integer(2) == 0 ? EventType::Put : EventType::Delete;
      e.kv = KeyValue{s.text(3), s.text(4), s.integer(5), s.integer(0), s.integer(6), s.integer(7)};
      last_seq = s.integer(1);
      events.push_back(std::move(e));
    }
  };
  // By the primary key (revision, seq): only the revisions asked for are read.
  std::string sql =
      fmt::format("SELECT {} FROM changes WHERE revision >= ?1 AND {} ORDER BY revision, seq", kColumns, clause(2));
  if (limit > 0) sql += fmt::format(" LIMIT {}", limit);
  Statement s(db, sql);
  s.bind(1, from_revision);
  bind_range(s, range, 2);
  read_rows(s);
  // Finish the last revision, so callers never see half a transaction.
  if (limit > 0 && events.size() == limit) {
    Statement rest(db, fmt::format("SELECT {} FROM changes WHERE revision = ?1 AND seq > ?2 AND {} ORDER BY seq",
                                   kColumns, clause(3)));
    rest.bind(1, events.back().revision()).bind(2, last_seq);
    bind_range(rest, range, 3);
    read_rows(rest);
  }
  return events;
}

}  // namespace

StoreResult<std::vector<Event>> SqliteStore::changes_since(int64_t from_revision, std::string_view prefix,
                                                           size_t limit) {
  return read_transaction(
      [&] { return read_changes(m_db, from_revision, RangeRequest::prefix(prefix), false, limit); });
}

StoreResult<std::vector<Event>> SqliteStore::changes_since_skipping(int64_t from_revision, std::string_view skipped) {
  if (skipped.empty())
    throw std::invalid_argument("SqliteStore::changes_since_skipping: an empty prefix skips every key");
  return read_transaction(
      [&] { return read_changes(m_db, from_revision, RangeRequest::prefix(skipped), true, 0); });
}

StoreResult<void> SqliteStore::compact(int64_t revision) {
  auto r = in_transaction(true, [&] {
    int64_t current = read_meta(m_db, "revision");
    int64_t compacted = read_meta(m_db, "compact_revision");
    if (revision > current)
      throw_request(StoreErrc::FutureRevision,
                    fmt::format("cannot compact to revision {}: the current revision is {}",
                                revision, current));
    if (revision < compacted)
      throw_request(StoreErrc::Compacted,
                    fmt::format("revision {} has been compacted; oldest available is {}",
                                revision, compacted),
                    "", compacted);
    if (revision > compacted) compact_to(m_db, revision);
    return true;
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

StoreResult<int64_t> SqliteStore::grant(std::chrono::seconds ttl) {
  if (ttl.count() <= 0)
    return std::unexpected(StoreError{StoreErrc::InvalidArgument,
                                      fmt::format("lease TTL must be positive, got {}s", ttl.count()),
                                      "", 0});
  int64_t ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count();
  int64_t now = now_ms();
  return in_transaction(true, [&] {
    Statement s(m_db, "INSERT INTO leases (ttl_ms, expires_at_ms) VALUES (?1, ?2)");
    s.bind(1, ttl_ms).bind(2, now + ttl_ms).run();
    return static_cast<int64_t>(sqlite3_last_insert_rowid(m_db.handle));
  });
}

namespace {
[[noreturn]] void throw_lease_not_found(int64_t lease) {
  throw_request(StoreErrc::LeaseNotFound,
                fmt::format("lease {} has expired or does not exist", lease),
                "grant a new lease; keys attached to the old one are gone");
}
}  // namespace

StoreResult<void> SqliteStore::keep_alive(int64_t lease) {
  int64_t now = now_ms();
  auto r = in_transaction(true, [&] {
    // Expire first, in the same transaction: renewing a lease whose deadline has passed
    // must fail, or its keys would outlive it.
    expire_leases(m_db, now, m_options.history_revisions);
    Statement s(m_db, "UPDATE leases SET expires_at_ms = ?1 + ttl_ms WHERE id = ?2");
    s.bind(1, now).bind(2, lease).run();
    if (sqlite3_changes(m_db.handle) == 0) throw_lease_not_found(lease);
    return true;
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

StoreResult<void> SqliteStore::revoke(int64_t lease) {
  int64_t now = now_ms();
  auto r = in_transaction(true, [&] {
    expire_leases(m_db, now, m_options.history_revisions);
    if (!lease_exists(m_db, lease)) throw_lease_not_found(lease);
    RevisionWriter writer(m_db);
    writer.remove_lease_keys(lease);
    Statement s(m_db, "DELETE FROM leases WHERE id = ?1");
    s.bind(1, lease).run();
    writer.finish(m_options.history_revisions);
    return true;
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

}  // namespace gaia
