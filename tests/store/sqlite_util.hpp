#pragma once
// Helpers of the SQLite store tests (sqlite_store_test.cpp, sqlite_admin_test.cpp).

#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <utility>

#include "store/sqlite_store.hpp"

namespace gaia::testing {

// The SQLite store at `path`; the test fails, showing why, when it does not open.
inline std::unique_ptr<SqliteStore> open_or_fail(const std::filesystem::path& path, SqliteStoreOptions options = {}) {
  auto store = SqliteStore::open(path, std::move(options));
  if (!store) FAIL(store.error().to_string());
  return std::move(*store);
}

}  // namespace gaia::testing
