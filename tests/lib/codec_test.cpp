// The store's JSON encoding of the core types (lib/codec.hpp): what a record holds must
// come back whole, and records written before a field existed must still load.
#include "lib/codec.hpp"

#include <catch2/catch.hpp>

using namespace gaia;
using nlohmann::json;

TEST_CASE("codec: a role's limits and start order survive the store and older records load without them",
          "[codec][limits][after]") {
  Role r;
  r.name = "worker";
  r.resources = Resources{8000, int64_t{30} << 30, 0, int64_t{100} << 30};
  r.limits = Resources{16000, int64_t{30} << 30, 0, int64_t{100} << 30};
  r.after = {"master"};
  json j = r;
  CHECK(j["limits"]["cpu_millis"] == 16000);
  CHECK(j["after"] == json::array({"master"}));
  Role back = j.get<Role>();
  CHECK(back.limits == r.limits);
  CHECK(back.after == r.after);
  CHECK(back.burstable());

  // A Guaranteed role: no limits, written as null and read back as none.
  Role plain;
  plain.name = "master";
  json p = plain;
  CHECK(p["limits"].is_null());
  CHECK_FALSE(p.get<Role>().limits);

  // A record from before limits and after existed.
  json old = p;
  old.erase("limits");
  old.erase("after");
  Role legacy = old.get<Role>();
  CHECK_FALSE(legacy.limits);
  CHECK(legacy.after.empty());

  // An instance's limit, written only when set.
  Instance i;
  i.tenant = "default";
  i.app = "spark";
  i.role = "worker";
  CHECK_FALSE(json(i).contains("limit"));
  i.limit = r.limits;
  CHECK(json(i).get<Instance>().limit == r.limits);
}
