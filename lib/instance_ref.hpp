#pragma once
// The ways a user names an instance on the command line, turned into its key
// "<ordinal>.<role>.<app>.<tenant>" (lib/cluster.hpp): the key itself, its DNS name
// ("<key>.gaia"), or the shorthands "app/role/ordinal" and "ordinal.role.app" in the
// current tenant (and "tenant/app/role/ordinal").

#include <string>
#include <string_view>

namespace gaia {

// The key `ref` stands for, with `tenant` filling in a shorthand's missing tenant. Text
// that is none of the forms above comes back unchanged, so the caller reports it as an
// unknown instance (with suggestions) instead of a parse error.
std::string instance_key_from_ref(std::string_view ref, const std::string& tenant);

}  // namespace gaia
