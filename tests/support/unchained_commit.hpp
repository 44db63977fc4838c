#pragma once
// A commit to a SQLite store as a gaia from before the history hash makes it
// (docs/store.md): the key, its change and the revision, without chaining the hash on
// or leaving it in the ring of the last revisions' hashes.

#include <sqlite3.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

namespace gaia::test {

inline void commit_without_history(const std::filesystem::path& store_file, const std::string& key,
                                   const std::string& value) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(store_file.c_str(), &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  const std::string sql =
      "BEGIN IMMEDIATE;"
      "UPDATE meta SET value = value + 1 WHERE name = 'revision';"
      "INSERT OR REPLACE INTO kv (key, value, create_revision, mod_revision, version, lease)"
      " SELECT ?1, ?2, value, value, 1, 0 FROM meta WHERE name = 'revision';"
      "INSERT INTO changes (revision, seq, type, key, value, create_revision, version, lease, prev_exists, prev_value,"
      " prev_create_revision, prev_mod_revision, prev_version, prev_lease)"
      " SELECT value, 0, 0, ?1, ?2, value, 1, 0, 0, '', 0, 0, 0, 0 FROM meta WHERE name = 'revision';"
      "COMMIT;";
  // One statement at a time, each with the key and value bound.
  const char* rest = sql.c_str();
  while (*rest) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, rest, -1, &stmt, &tail) == SQLITE_OK);
    rest = tail;
    if (!stmt) continue;
    if (sqlite3_bind_parameter_count(stmt) >= 2) {
      sqlite3_bind_text(stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(stmt, 2, value.c_str(), -1, SQLITE_TRANSIENT);
    }
    int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    REQUIRE(rc == SQLITE_DONE);
  }
  sqlite3_close(db);
}

}  // namespace gaia::test
