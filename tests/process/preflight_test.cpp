// The default loopback range of a process cluster: the octets in use read from the text
// of /proc/net/tcp, and the choice that is stable for a store and skips what is in use.
#include <catch2/catch.hpp>

#include "process/preflight.hpp"

using namespace gaia::process;

TEST_CASE("loopback ranges in use are read from /proc/net/tcp", "[process][preflight]") {
  // Addresses as the kernel prints them: each 32-bit word in host (little-endian) order,
  // so 127.0.0.1 is 0100007F and 127.64.128.1 is 0180407F.
  const char* text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
      "   1: 0180407F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1\n"
      "   2: 0100000A:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1\n"
      "   3: garbage\n";
  CHECK(loopback_octets_in_use(text) == std::set<int>{0, 64});
  CHECK(loopback_octets_in_use("").empty());
}

TEST_CASE("a store keeps its loopback range, and a range in use is skipped", "[process][preflight]") {
  std::string a = pick_loopback_subnet("/home/u/.local/state/gaia/gaia.db", {});
  CHECK(a == pick_loopback_subnet("/home/u/.local/state/gaia/gaia.db", {}));
  CHECK(a.starts_with("127."));
  CHECK(a.ends_with(".0.0/16"));
  CHECK(a != "127.0.0.0/16");
  int octet = std::stoi(a.substr(4, a.find('.', 4) - 4));
  std::string b = pick_loopback_subnet("/home/u/.local/state/gaia/gaia.db", {octet});
  CHECK(b != a);
  // Another store (almost surely) lands elsewhere.
  CHECK(pick_loopback_subnet("/tmp/other/gaia.db", {}) != a);
  // Everything in use: a fixed fallback (the port check at start then decides).
  std::set<int> all;
  for (int k = 0; k < 256; ++k) all.insert(k);
  CHECK(pick_loopback_subnet("/x", all) == "127.64.0.0/16");
}
