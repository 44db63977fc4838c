// The fast path for instance records (lib/instance_scan.hpp) against nlohmann's
// from_json, the definition: on random instances as gaia writes them, on records with
// what only the slow path follows (escapes, UTF-8, unknown keys, floats, nulls), and on
// random mutations of both, every record either decodes to the same instance both ways
// or is left to the slow path. A record the fast path accepts must never be one the
// slow path rejects.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <random>
#include <set>

#include "lib/codec.hpp"
#include "lib/instance_scan.hpp"
#include "lib/record_encode.hpp"
#include "lib/state_apply.hpp"

using namespace gaia;

namespace {

std::string random_name(std::mt19937& rng, bool unusual) {
  static const std::string plain = "abcdefghijklmnopqrstuvwxyz0123456789-._/:";
  static const std::vector<std::string> odd = {"\"", "\\", "\n", "\t", "é", "日本", "\x7f", " "};
  std::string s;
  size_t n = rng() % 12;
  for (size_t k = 0; k < n; ++k) {
    if (unusual && rng() % 8 == 0) s += odd[rng() % odd.size()];
    else s += plain[rng() % plain.size()];
  }
  return s;
}

int64_t random_int(std::mt19937& rng) {
  switch (rng() % 5) {
    case 0: return 0;
    case 1: return static_cast<int64_t>(rng() % 1000);
    case 2: return -static_cast<int64_t>(rng() % 1000);
    case 3: return (static_cast<int64_t>(rng()) << 31) ^ static_cast<int64_t>(rng());
    default: return std::numeric_limits<int64_t>::max() - static_cast<int64_t>(rng() % 3);
  }
}

Resources random_resources(std::mt19937& rng) {
  return Resources{random_int(rng), random_int(rng), random_int(rng) % 8, random_int(rng)};
}

Instance random_instance(std::mt19937& rng, bool unusual) {
  Instance i;
  i.tenant = random_name(rng, unusual);
  i.app = random_name(rng, unusual);
  i.role = random_name(rng, unusual);
  i.ordinal = static_cast<int>(rng() % 100000);
  i.node = random_name(rng, unusual);
  i.state = static_cast<InstanceState>(rng() % 6);
  i.request = random_resources(rng);
  if (rng() % 3 == 0) i.limit = random_resources(rng);
  if (rng() % 3 == 0) i.reservation = random_resources(rng);
  if (rng() % 3 == 0) i.usage = random_resources(rng);
  static const std::vector<std::string> priorities = {"sys", "prod", "prod:200", "nonprod", "nonprod:10:non-preemptible"};
  i.priority = *parse_priority(priorities[rng() % priorities.size()]);
  for (size_t k = rng() % 5; k > 0; --k) {
    // The value first, as `labels[name] = value` drew them.
    std::string value = random_name(rng, unusual);
    i.labels.set(random_name(rng, unusual), std::move(value));
  }
  i.address = random_name(rng, unusual);
  for (size_t k = rng() % 3; k > 0; --k) i.ports[random_name(rng, unusual)] = static_cast<int>(rng() % 65536);
  for (size_t k = rng() % 3; k > 0; --k)
    i.volumes.push_back(VolumeBinding{random_name(rng, unusual), random_name(rng, unusual), random_name(rng, unusual),
                                      random_int(rng), random_int(rng)});
  i.pending_reason = random_name(rng, unusual);
  i.restarts = static_cast<int>(rng() % 10);
  i.migrations = static_cast<int>(rng() % 10);
  i.started_ms = rng() % 2 ? random_int(rng) : 0;
  i.restart_at_ms = rng() % 2 ? random_int(rng) : 0;
  i.failure = rng() % 2 ? random_name(rng, unusual) : "";
  i.hash = rng() % 2 ? random_name(rng, false) : "";
  i.throttled = rng() % 2;
  i.internal_failure = rng() % 2;
  i.snapped_back_ms = rng() % 2 ? random_int(rng) : 0;
  i.generation = rng() % 2 ? random_int(rng) : 0;
  i.exit_code = rng() % 2 ? static_cast<int>(rng() % 256) : 0;
  return i;
}

// The slow path's answer: the instance, or nothing when it rejects the record.
std::optional<nlohmann::json> slow(const std::string& text) {
  try {
    return nlohmann::json(nlohmann::json::parse(text).get<Instance>());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Checks one record: whatever the fast path accepts, the slow path decodes the same.
// Returns whether the fast path took it.
// With `pool`, the labels are looked up in it, as a load does.
bool agrees(const std::string& text, LabelPool* pool = nullptr) {
  auto fast = scan_instance(text, pool);
  if (!fast) return false;
  auto want = slow(text);
  INFO(text);
  REQUIRE(want);
  CHECK(nlohmann::json(*fast) == *want);
  return true;
}

}  // namespace

TEST_CASE("instance scan: records as gaia writes them decode as from_json does", "[lib][instance_scan]") {
  std::mt19937 rng(20261127);
  int taken = 0;
  for (int n = 0; n < 3000; ++n) {
    Instance i = random_instance(rng, false);
    std::string text = nlohmann::json(i).dump();
    CHECK(agrees(text));
    // Pretty-printed too: whitespace is allowed anywhere between tokens.
    taken += agrees(nlohmann::json(i).dump(2));
  }
  CHECK(taken == 3000);
}

TEST_CASE("instance scan: what only the slow path follows is left to it", "[lib][instance_scan]") {
  std::mt19937 rng(7);
  for (int n = 0; n < 2000; ++n) (void)agrees(nlohmann::json(random_instance(rng, true)).dump());
  // Each of these is valid for from_json (or an error there) but not the fast shape.
  for (std::string text : {
           R"({"tenant":"a\"b"})",                      // An escape.
           R"({"tenant":"é"})",                         // UTF-8.
           R"({"tenant":"a","colour":"red"})",          // A key from_json ignores.
           R"({"ordinal":1.0})",                        // A float nlohmann converts.
           R"({"ordinal":3000000000})",                 // Out of int: nlohmann wraps.
           R"({"ordinal":01})",                         // Not JSON.
           R"({"limit":null})",                         // A null.
           R"({"state":"Sleeping"})",                   // An unknown state (read as Pending).
           R"({"priority":"urgent"})",                  // A bad priority: a corrupt record.
           R"({"request":{"cpu_millis":1,"tpu":2}})",   // A key Resources ignores.
           R"({"labels":{"a":1}})",                     // A label that is not a string.
           R"({"throttled":1})",                        // Not a bool.
           R"([])",                                     // Not an object.
           R"({"tenant":"a"} x)",                       // Trailing text.
           R"({"tenant":"a",})",                        // A trailing comma.
           "",
       }) {
    INFO(text);
    CHECK_FALSE(scan_instance(text));
  }
  // Duplicate keys: the last wins both ways.
  CHECK(agrees(R"({"ordinal":1,"ordinal":2,"labels":{"a":"1"},"labels":{"b":"2","b":"3"}})"));
  CHECK(scan_instance(R"({"ordinal":1,"ordinal":2})")->ordinal == 2);
  // An empty record is a default instance.
  CHECK(agrees("{}"));
  CHECK(agrees(" { } "));
}

TEST_CASE("instance scan: mutated records are never accepted where the slow path rejects them",
          "[lib][instance_scan]") {
  std::mt19937 rng(99);
  static const std::string alphabet = "{}[]\":,0123456789-.eE ntrufalsx\\";
  int taken = 0, total = 0;
  for (int n = 0; n < 4000; ++n) {
    std::string text = nlohmann::json(random_instance(rng, rng() % 4 == 0)).dump();
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 4); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    ++total;
    taken += agrees(text);
  }
  // Some mutations leave a valid record (a digit for a digit), most do not.
  CHECK(taken > 0);
  CHECK(taken < total);
}

TEST_CASE("instance scan: records read through one label pool decode as from_json does",
          "[lib][instance_scan]") {
  // A load reads every record through one pool (lib/labels.hpp): a set of labels it
  // holds must never reach a record with other labels, also after records that failed
  // after their labels were read, or that the pool no longer takes once full.
  std::mt19937 rng(20261128);
  static const std::vector<Labels> sets = {
      Labels{},
      Labels{{"gaia.io/app", "web"}, {"gaia.io/role", "main"}},
      Labels{{"gaia.io/app", "web"}, {"gaia.io/role", "db"}},
      Labels{{"gaia.io/app", "web"}, {"gaia.io/role", "main"}, {"tier", "front"}},
      Labels{{"a", "bc"}},
      Labels{{"ab", "c"}},
  };
  LabelPool pool;
  int taken = 0, shared = 0;
  std::optional<Instance> last_main;
  for (int n = 0; n < 6000; ++n) {
    Instance i = random_instance(rng, rng() % 8 == 0);
    if (rng() % 4 != 0) i.labels = sets[rng() % sets.size()];
    std::string text = nlohmann::json(i).dump();
    if (rng() % 5 == 0 && !text.empty()) text.erase(rng() % text.size(), 1 + rng() % 3);
    taken += agrees(text, &pool);
    auto fast = scan_instance(text, &pool);
    if (fast && fast->labels == sets[1]) {
      if (last_main && last_main->labels.shares_with(fast->labels)) ++shared;
      last_main = fast;
    }
  }
  CHECK(taken > 3000);
  CHECK(shared > 100);  // The pool did share: equal sets came back as one map.
}

TEST_CASE("decode_instances: on several threads, the instances, shared labels and first error of one thread",
          "[lib][instance_scan]") {
  // A full load decodes its instance records in parts on several threads
  // (lib/state_apply.hpp): the list must be the one decoding them in turn gives, with a
  // role's labels still one map across the parts, and a bad record anywhere must fail
  // the load with the error of the first bad one, leaving the list as it was.
  std::mt19937 rng(20261129);
  static const std::vector<Labels> sets = {
      Labels{{"gaia.io/app", "web"}, {"gaia.io/role", "main"}},
      Labels{{"gaia.io/app", "web"}, {"gaia.io/role", "db"}},
      Labels{{"gaia.io/app", "api"}, {"gaia.io/role", "main"}, {"tier", "front"}},
  };
  std::vector<KeyValue> kvs;
  for (int n = 0; n < 20000; ++n) {
    // As gaia writes them (records only the slow path reads build a map each).
    Instance i = random_instance(rng, false);
    i.labels = sets[rng() % sets.size()];
    kvs.push_back(KeyValue{fmt::format("instances/{:06d}", n), nlohmann::json(i).dump(), 1, 1, 1, 0});
  }
  auto decode = [&](unsigned threads, std::vector<Instance>& out) {
    LabelPool pool;
    return decode_instances(out, kvs, pool, threads);
  };
  std::vector<Instance> one = {Instance{}}, four = {Instance{}};  // Appended after what is there.
  REQUIRE(decode(1, one));
  REQUIRE(decode(4, four));
  REQUIRE(one.size() == kvs.size() + 1);
  REQUIRE(four.size() == one.size());
  for (size_t k = 0; k < one.size(); ++k) {
    INFO("instance " << k);
    REQUIRE(nlohmann::json(four[k]) == nlohmann::json(one[k]));
  }
  // One map per set of labels, whichever thread decoded the instance.
  std::set<const void*> maps;
  for (size_t k = 1; k < four.size(); ++k) maps.insert(&four[k].labels.map());
  CHECK(maps.size() == sets.size());

  // Two bad records, the first in a later part: the error names the first in key order.
  kvs[15000].value.erase(10, 3);
  kvs[3000].value = "{\"tenant\": 7}";
  std::vector<Instance> failed = {Instance{}};
  auto r = decode(4, failed);
  REQUIRE_FALSE(r);
  CHECK(r.error().front().path == "instances/003000");
  CHECK(failed.size() == 1);
  auto sequential = decode(1, failed);
  REQUIRE_FALSE(sequential);
  CHECK(sequential.error().front().path == r.error().front().path);
  CHECK(sequential.error().front().message == r.error().front().message);
}

namespace {

// What the config center's slow path reads of a node record (lib/config_center.cpp):
// its name (else `fallback`) and its string-valued labels; nothing when it rejects it.
std::optional<std::pair<std::string, std::map<std::string, std::string>>> slow_node_labels(
    const std::string& text, const std::string& fallback) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    std::pair<std::string, std::map<std::string, std::string>> out{j.value("name", fallback), {}};
    if (j.contains("labels") && j["labels"].is_object())
      for (const auto& [k, v] : j["labels"].items())
        if (v.is_string()) out.second[k] = v.get<std::string>();
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Whatever the fast path takes, the slow path reads the same. Returns whether it took it.
bool node_agrees(const std::string& text) {
  auto fast = scan_node_labels(text);
  if (!fast) return false;
  auto want = slow_node_labels(text, "from-key");
  INFO(text);
  REQUIRE(want);
  CHECK((fast->name ? std::string(*fast->name) : std::string("from-key")) == want->first);
  std::map<std::string, std::string> labels;
  for (const auto& [k, v] : fast->labels) labels[std::string(k)] = std::string(v);
  CHECK(labels == want->second);
  CHECK(labels.size() == fast->labels.size());
  return true;
}

Node random_node(std::mt19937& rng, bool unusual) {
  Node n;
  n.name = random_name(rng, unusual);
  n.address = random_name(rng, unusual);
  n.instance_subnet = random_name(rng, unusual);
  n.capacity = random_resources(rng);
  for (size_t k = rng() % 6; k > 0; --k) n.labels[random_name(rng, unusual)] = random_name(rng, unusual);
  for (size_t k = rng() % 3; k > 0; --k)
    n.volume_groups.push_back(VolumeGroup{random_name(rng, unusual), random_name(rng, unusual), random_int(rng),
                                          random_int(rng)});
  for (size_t k = rng() % 3; k > 0; --k) n.cached_images.push_back(random_name(rng, unusual));
  n.draining = rng() % 2;
  n.down_reason = random_name(rng, unusual);
  n.zone = random_name(rng, unusual);
  return n;
}

}  // namespace

TEST_CASE("node labels scan: records as gaia writes them read as the config center's slow path does",
          "[lib][instance_scan]") {
  std::mt19937 rng(20261130);
  int taken = 0;
  for (int n = 0; n < 3000; ++n) {
    Node node = random_node(rng, false);
    taken += node_agrees(nlohmann::json(node).dump());
    (void)node_agrees(nlohmann::json(node).dump(2));
  }
  CHECK(taken == 3000);
  for (int n = 0; n < 2000; ++n) (void)node_agrees(nlohmann::json(random_node(rng, true)).dump());
  // Valid for the slow path, or an error there, but not the fast shape.
  for (std::string text : {
           R"({"name":"a\"b"})",                    // An escape.
           R"({"labels":{"zone":"é"}})",            // UTF-8.
           R"({"labels":{"a":1}})",                 // A label that is not a string.
           R"({"labels":{"b":"1","a":"2"}})",       // Out of key order.
           R"({"labels":{"a":"1","a":"2"}})",       // Repeated.
           R"({"name":"a","name":"b"})",            // Repeated name.
           R"({"name":null})",                      // Not a string: an error there.
           R"({"labels":null})",                    // Not an object: no labels there.
           R"({"capacity":01})",                    // Not JSON.
           R"({"capacity":1.})",                    // Not JSON.
           R"({"capacity":-})",                     // Not JSON.
           R"({"capacity":1e999})",                 // Beyond a double: an error there.
           R"({"x":[1,2,})",                        // Not JSON.
           R"({"x":tru})",                          // Not JSON.
           R"({"name":"a"} x)",                     // Trailing text.
           "",
       }) {
    INFO(text);
    CHECK_FALSE(scan_node_labels(text));
  }
  // Anything else of any shape is read past.
  CHECK(node_agrees(R"({"x":[1,-2.5e+3,0,true,false,null,{"y":[[]]},"z"],"name":"n1","labels":{"a":"1","b":"2"}})"));
  CHECK(node_agrees("{}"));
  std::string deep = std::string(100, '[') + std::string(100, ']');
  CHECK_FALSE(scan_node_labels("{\"x\":" + deep + "}"));  // Past the depth: the slow way.
}

TEST_CASE("node labels scan: mutated records are never taken where the slow path rejects them",
          "[lib][instance_scan]") {
  std::mt19937 rng(1234);
  static const std::string alphabet = "{}[]\":,0123456789-.eE ntrufalsx\\";
  int taken = 0, total = 0;
  for (int n = 0; n < 4000; ++n) {
    std::string text = nlohmann::json(random_node(rng, rng() % 4 == 0)).dump();
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits && !text.empty(); ++k) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 4); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    ++total;
    taken += node_agrees(text);
  }
  CHECK(taken > 0);
  CHECK(taken < total);
}

// The writer of the records a commit puts (lib/record_encode.hpp) against nlohmann's
// dump, the definition: every byte the same, control characters, quotes and non-ASCII
// text included; text that is not UTF-8 is refused by both alike.
TEST_CASE("encode_instance and encode_event write what nlohmann::json(x).dump() writes", "[codec][encode]") {
  std::mt19937 rng(20261129);
  static const std::vector<std::string> controls = {"\x01", "\x1f", "\b", "\f", "\r", "\n", "\t", "\"", "\\", "\x7f"};
  auto spice = [&](std::string s) {
    if (rng() % 4 == 0) s.insert(rng() % (s.size() + 1), controls[rng() % controls.size()]);
    return s;
  };
  for (int round = 0; round < 3000; ++round) {
    Instance i = random_instance(rng, round % 2 == 1);
    i.pending_reason = spice(i.pending_reason);
    i.address = spice(i.address);
    if (rng() % 4 == 0) i.ports[spice("p")] = static_cast<int>(rng() % 65536);
    if (rng() % 4 == 0) i.labels.set(spice("k"), spice("v"));
    // (Spice inside a multibyte character makes text that is not UTF-8.)
    std::string want;
    try {
      want = nlohmann::json(i).dump();
    } catch (const nlohmann::json::type_error&) {
      REQUIRE_THROWS_AS(encode_instance(i), nlohmann::json::type_error);
      continue;
    }
    INFO(want);
    REQUIRE(encode_instance(i) == want);

    TimelineEvent e;
    e.seq = random_int(rng);
    e.time = random_name(rng, false);
    e.type = rng() % 2 ? "Normal" : "Warning";
    e.reason = random_name(rng, false);
    e.message = spice(random_name(rng, round % 2 == 1));
    e.op = random_name(rng, false);
    for (std::string* f : {&e.tenant, &e.app, &e.role, &e.instance, &e.node})
      if (rng() % 2) *f = random_name(rng, round % 3 == 1);
    try {
      want = nlohmann::json(e).dump();
    } catch (const nlohmann::json::type_error&) {
      REQUIRE_THROWS_AS(encode_event(e), nlohmann::json::type_error);
      continue;
    }
    REQUIRE(encode_event(e) == want);
  }
  // Not UTF-8: refused the same way (nlohmann's type_error 316).
  Instance bad = random_instance(rng, false);
  bad.pending_reason = "caf\xe9";
  CHECK_THROWS_AS(encode_instance(bad), nlohmann::json::type_error);
  TimelineEvent bad_event;
  bad_event.message = "\xff";
  CHECK_THROWS_AS(encode_event(bad_event), nlohmann::json::type_error);
  // A state no name is given for writes what the enum's serializer writes.
  Instance odd = random_instance(rng, false);
  odd.state = static_cast<InstanceState>(17);
  CHECK(encode_instance(odd) == nlohmann::json(odd).dump());
}
