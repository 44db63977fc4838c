#pragma once
// The failures every Store implementation reports the same way, so the contract tests
// (tests/store/) see one message and one hint whichever store answers.
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "lib/store.hpp"

namespace gaia {

inline StoreError store_error(StoreErrc code, std::string message, std::string hint = {},
                              int64_t compact_revision = 0) {
  return StoreError{code, std::move(message), std::move(hint), compact_revision};
}

inline StoreError lease_not_found(int64_t lease) {
  return store_error(StoreErrc::LeaseNotFound, fmt::format("lease {} has expired or does not exist", lease),
                     "grant a new lease; keys attached to the old one are gone");
}

}  // namespace gaia
