#pragma once
// A role named by views of its instance's own strings, for the controllers that group
// every instance by role on every reconcile: the key costs no allocation, where a
// "tenant/app/role" string per instance did (50,000 of them per pass).

#include <functional>
#include <string_view>

namespace gaia {

struct RoleKey {
  std::string_view tenant, app, role;
  bool operator==(const RoleKey&) const = default;
};

struct RoleKeyHash {
  size_t operator()(const RoleKey& k) const {
    std::hash<std::string_view> h;
    return h(k.tenant) ^ (h(k.app) * 31) ^ (h(k.role) * 1000003);
  }
};

}  // namespace gaia
