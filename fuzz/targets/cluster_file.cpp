// Cluster files (`gaia cluster create -f FILE`): any text is a cluster or a list of
// located errors, never a crash, a hang or an allocation the documented limits do not
// allow; an accepted cluster has uniquely named nodes with sane port ranges and the
// default tenant.

#include <fmt/format.h>

#include <set>

#include "fuzz/check.hpp"
#include "lib/codec.hpp"
#include "spec/cluster_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);
  const std::string file = "fuzz/cluster.yaml";

  auto parsed = gaia::spec::parse_cluster_file(text, file);
  if (!parsed) {
    gaia::fuzz::check_diagnostics(parsed.error(), text, file);
    return 0;
  }
  const gaia::ClusterSpec& cluster = parsed->cluster;
  std::set<std::string> names;
  for (const gaia::Node& n : cluster.nodes) {
    GAIA_FUZZ_CHECK(!n.name.empty(), "a node without a name");
    GAIA_FUZZ_CHECK(names.insert(n.name).second, fmt::format("two nodes named {:?}", n.name));
    GAIA_FUZZ_CHECK(n.port_min >= 1 && n.port_min <= n.port_max && n.port_max <= 65535,
                    fmt::format("node {} has ports {}-{}", n.name, n.port_min, n.port_max));
    GAIA_FUZZ_CHECK(n.capacity.cpu_millis >= 0 && n.capacity.memory_bytes >= 0 && n.capacity.gpu >= 0 &&
                        n.capacity.disk_bytes >= 0,
                    fmt::format("node {} has a negative capacity", n.name));
  }
  // What cluster create stores must be writable as JSON (UTF-8 only).
  for (const gaia::Node& n : cluster.nodes) (void)nlohmann::json(n).dump();
  for (const gaia::Tenant& t : cluster.tenants) (void)nlohmann::json(t).dump();
  bool has_default = false;
  for (const gaia::Tenant& t : cluster.tenants) has_default = has_default || t.name == "default";
  GAIA_FUZZ_CHECK(has_default, "an accepted cluster without the default tenant");
  return 0;
}
