// The pure part of `gaia map` (cli/cluster_map.hpp): racks and levels from a state,
// the grid at several widths, hot spots, pending work, SVG and JSON, and the text map of
// a small fixed cluster against a golden file.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sstream>

#include "cli/cluster_map.hpp"
#include "cli/table.hpp"
#include "tests/golden_util.hpp"

using namespace gaia;
using namespace gaia::cli;

namespace {

constexpr int64_t k_map_gi = int64_t{1} << 30;
// 2025-03-04 05:06:07 UTC.
constexpr int64_t k_map_now = 1741064767000;

Node map_node(const std::string& name, const std::string& zone, const std::string& rack, int cpu = 16, int mem_gi = 64) {
  Node n;
  n.name = name;
  n.zone = zone;
  n.rack = rack;
  n.capacity.cpu_millis = cpu * 1000;
  n.capacity.memory_bytes = mem_gi * k_map_gi;
  return n;
}

Instance map_instance(const std::string& app, int ordinal, const std::string& node, int64_t cpu_millis, int64_t mem_gi,
                      InstanceState state = InstanceState::Running) {
  Instance i;
  i.tenant = "default";
  i.app = app;
  i.role = app;
  i.ordinal = ordinal;
  i.node = node;
  i.state = state;
  i.request.cpu_millis = cpu_millis;
  i.request.memory_bytes = mem_gi * k_map_gi;
  return i;
}

// Three racks in two zones and a node without a rack: n1..n3 in z1/r1, n4 (rack from its
// labels) and n10 in z1/r2, n5 in z2/r1, n6 nowhere.
ClusterState map_small_cluster() {
  ClusterState st;
  auto& nodes = st.snapshot.nodes;
  nodes.push_back(map_node("n1", "z1", "r1"));
  nodes.push_back(map_node("n2", "z1", "r1"));
  nodes.push_back(map_node("n3", "z1", "r1"));
  Node n4 = map_node("n4", "", "");
  n4.labels = {{"zone", "z1"}, {"rack", "r2"}};
  nodes.push_back(n4);
  nodes.push_back(map_node("n10", "z1", "r2"));
  nodes.push_back(map_node("n5", "z2", "r1", 8, 32));
  nodes.push_back(map_node("n6", "", "", 4, 16));
  nodes[2].state = NodeState::Cordoned;
  nodes[6].state = NodeState::Down;
  auto& in = st.snapshot.instances;
  in.push_back(map_instance("web", 0, "n1", 15000, 8));     // cpu 93%
  in.push_back(map_instance("db", 0, "n2", 2000, 40));      // memory 62%
  in.push_back(map_instance("cache", 0, "n3", 1000, 10));   // memory 15%, cordoned
  in.push_back(map_instance("batch", 0, "n10", 500, 1));    // 3%
  in.push_back(map_instance("gpu", 0, "n5", 8000, 32));     // full
  in.push_back(map_instance("big", 0, "", 32000, 128, InstanceState::Pending));
  in.back().pending_reason = "no node fits: 7 too small";
  in.push_back(map_instance("small", 0, "", 500, 1, InstanceState::Pending));
  in.push_back(map_instance("mid", 0, "", 4000, 16, InstanceState::Pending));
  st.settings["cluster_name"] = "small";
  return st;
}

MapOptions map_titled(const std::string& title) {
  MapOptions o;
  o.title = title;
  return o;
}

const MapNode& map_node_named(const ClusterMap& m, const std::string& name) {
  for (const auto& n : m.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return m.nodes.front();
}

size_t map_count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// A small well-formedness check: every tag closes in order, attribute values are quoted,
// and text and attributes hold no raw '<' and no '&' that does not start an entity.
void map_check_well_formed(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  auto check_text = [&](std::string_view t) {
    for (size_t k = 0; k < t.size(); ++k) {
      if (t[k] == '<') FAIL("raw < in text: " << t);
      if (t[k] == '&') {
        size_t semi = t.find(';', k);
        REQUIRE(semi != std::string_view::npos);
        std::string_view ent = t.substr(k, semi - k + 1);
        bool known = ent == "&amp;" || ent == "&lt;" || ent == "&gt;" || ent == "&quot;" || ent == "&apos;";
        INFO("entity " << ent);
        CHECK(known);
      }
    }
  };
  while (i < xml.size()) {
    size_t lt = xml.find('<', i);
    if (lt == std::string::npos) {
      check_text(std::string_view(xml).substr(i));
      break;
    }
    check_text(std::string_view(xml).substr(i, lt - i));
    size_t gt = xml.find('>', lt);
    REQUIRE(gt != std::string::npos);
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.starts_with("?")) continue;
    if (tag.starts_with("/")) {
      REQUIRE_FALSE(open.empty());
      CHECK(open.back() == tag.substr(1));
      open.pop_back();
      continue;
    }
    bool self = tag.ends_with("/");
    if (self) tag.pop_back();
    std::string name = tag.substr(0, tag.find_first_of(" \n"));
    // Attributes: name="value" pairs; the values are checked like text.
    size_t k = name.size();
    while (k < tag.size()) {
      while (k < tag.size() && tag[k] == ' ') ++k;
      if (k >= tag.size()) break;
      size_t eq = tag.find('=', k);
      REQUIRE(eq != std::string::npos);
      REQUIRE(eq + 1 < tag.size());
      REQUIRE(tag[eq + 1] == '"');
      size_t end = tag.find('"', eq + 2);
      REQUIRE(end != std::string::npos);
      check_text(std::string_view(tag).substr(eq + 2, end - eq - 2));
      k = end + 1;
    }
    if (!self) open.push_back(name);
  }
  CHECK(open.empty());
}

}  // namespace

TEST_CASE("map: levels are tenths of the larger of cpu and memory", "[map]") {
  CHECK(map_level(0) == 0);
  CHECK(map_level(0.05) == 0);
  CHECK(map_level(0.1) == 1);
  CHECK(map_level(0.5) == 5);
  CHECK(map_level(0.8999) == 8);
  CHECK(map_level(0.9) == 9);
  CHECK(map_level(27.0 / 30.0) == 9);
  CHECK(map_level(1.7) == 9);
  CHECK(map_level(-1) == 0);
  CHECK(level_char(0) == '_');
  CHECK(level_char(9) == '@');

  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now);
  const MapNode& n1 = map_node_named(m, "n1");
  CHECK(n1.cpu == Approx(15.0 / 16.0));
  CHECK(n1.memory == Approx(8.0 / 64.0));
  CHECK(n1.fraction == Approx(15.0 / 16.0));
  CHECK(n1.level == 9);
  CHECK(n1.cell == MapCell::Level);
  CHECK(map_node_named(m, "n2").level == 6);  // memory 40/64
  CHECK(map_node_named(m, "n3").cell == MapCell::Cordoned);
  CHECK(map_node_named(m, "n3").level == 1);
  CHECK(map_node_named(m, "n4").instances.empty());
  CHECK(map_node_named(m, "n4").level == 0);
  CHECK(map_node_named(m, "n6").cell == MapCell::Down);
  CHECK(map_node_named(m, "n1").instances == std::vector<std::string>{"0.web.web.default"});
  CHECK(m.instances == 5);
  CHECK(m.allocated.cpu_millis == 15000 + 2000 + 1000 + 500 + 8000);
}

TEST_CASE("map: nodes are grouped by rack within their zone, from fields or labels", "[map]") {
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now);
  REQUIRE(m.racks.size() == 4);
  CHECK(m.racks[0].name == "z1/r1");
  CHECK(m.racks[1].name == "z1/r2");
  CHECK(m.racks[2].name == "z2/r1");  // Rack r1 of another zone is another rack.
  CHECK(m.racks[3].name == "");       // Without a rack: one group, last.
  auto names = [&](const MapRack& r) {
    std::vector<std::string> out;
    for (size_t k : r.nodes) out.push_back(m.nodes[k].name);
    return out;
  };
  CHECK(names(m.racks[0]) == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(names(m.racks[1]) == std::vector<std::string>{"n4", "n10"});  // Natural order; n4's rack from labels.
  CHECK(names(m.racks[3]) == std::vector<std::string>{"n6"});
  CHECK(m.racks[1].empty == 1);
  CHECK(m.racks[0].capacity.cpu_millis == 48000);
  CHECK(m.racks[0].allocated.cpu_millis == 18000);
  CHECK(map_node_named(m, "n4").rack == "z1/r2");

  // A rack without a zone is named by the rack alone; a cluster without racks is one group.
  ClusterState flat;
  flat.snapshot.nodes = {map_node("a", "", "r7"), map_node("b", "", ""), map_node("c", "", "")};
  ClusterMap f = build_cluster_map(flat, k_map_now);
  REQUIRE(f.racks.size() == 2);
  CHECK(f.racks[0].name == "r7");
  CHECK(f.racks[1].nodes.size() == 2);
  flat.snapshot.nodes.erase(flat.snapshot.nodes.begin());
  std::string text = map_text(build_cluster_map(flat, k_map_now), {});
  CHECK(text.find("all nodes (no rack) · 2 nodes") != std::string::npos);
}

TEST_CASE("map: hot spots are the nodes at or above the threshold, fullest first", "[map]") {
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now);
  REQUIRE(m.hot.size() == 2);
  CHECK(m.nodes[m.hot[0]].name == "n5");  // 100%
  CHECK(m.nodes[m.hot[1]].name == "n1");  // 93%
  CHECK(m.racks[0].hot == 1);
  MapOptions o;
  o.hot = 0.6;
  ClusterMap lower = build_cluster_map(map_small_cluster(), k_map_now, o);
  CHECK(lower.hot.size() == 3);
  // Down nodes are never hot, whatever was on them.
  ClusterState st = map_small_cluster();
  st.snapshot.instances.push_back(map_instance("lost", 0, "n6", 4000, 16));
  ClusterMap down = build_cluster_map(st, k_map_now);
  CHECK(down.hot.size() == 2);
}

TEST_CASE("map: pending work, the largest first by its share of the biggest node", "[map]") {
  MapOptions o;
  o.largest = 2;
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now, o);
  CHECK(m.pending == 3);
  CHECK(m.pending_request.cpu_millis == 36500);
  REQUIRE(m.largest_pending.size() == 2);
  CHECK(m.largest_pending[0].key == "0.big.big.default");
  CHECK(m.largest_pending[0].reason == "no node fits: 7 too small");
  CHECK(m.largest_pending[1].key == "0.mid.mid.default");
  std::string text = map_text(m, {});
  CHECK(text.find("pending: 3 instances asking for cpu 36.5, memory 145Gi; the largest:") != std::string::npos);
  CHECK(text.find("... and 1 more") != std::string::npos);
}

TEST_CASE("map: usage counts what instances report, at their request when they report none", "[map]") {
  ClusterState st = map_small_cluster();
  for (auto& i : st.snapshot.instances) {
    if (i.app == "web") i.usage = Resources{4000, 4 * k_map_gi, 0, 0};    // 25%
    if (i.app == "db") i.usage = Resources{1000, 16 * k_map_gi, 0, 0};     // 25%
  }
  MapOptions o;
  o.measure = MapMeasure::Usage;
  ClusterMap m = build_cluster_map(st, k_map_now, o);
  CHECK(map_node_named(m, "n1").level == 2);
  CHECK(map_node_named(m, "n1").usage->cpu_millis == 4000);
  CHECK(map_node_named(m, "n1").allocated.cpu_millis == 15000);
  CHECK(map_node_named(m, "n4").cell == MapCell::Level);  // Empty: nothing to report, 0%.
  CHECK(map_node_named(m, "n10").cell == MapCell::Unknown);
  CHECK(map_node_named(m, "n5").cell == MapCell::Unknown);
  CHECK(m.usage_unreported == 3);
  CHECK(m.hot.empty());  // n1 is hot by allocation, not by use; n5 is unknown.
  std::string text = map_text(m, {});
  CHECK(text.find("note: 3 of 5 instances report no usage") != std::string::npos);
  CHECK(text.find("?? no usage reported") != std::string::npos);

  // Of two instances on a node, one reporting: the other counts at its request.
  st.snapshot.instances.push_back(map_instance("web", 1, "n1", 1000, 1));
  ClusterMap mixed = build_cluster_map(st, k_map_now, o);
  CHECK(map_node_named(mixed, "n1").usage->cpu_millis == 5000);
  CHECK(map_node_named(mixed, "n1").usage_reported == 1);
}

TEST_CASE("map: the grid fits the width at several widths", "[map]") {
  CHECK(cells_per_row(80, 2, 2) == 26);
  CHECK(cells_per_row(20, 2, 2) == 6);
  CHECK(cells_per_row(200, 2, 2) == 66);
  CHECK(cells_per_row(4, 2, 2) == 1);
  CHECK(cells_per_row(80, 2, 12, 2) == 5);

  // One rack of 100 nodes.
  ClusterState st;
  for (int k = 1; k <= 100; ++k) st.snapshot.nodes.push_back(map_node(fmt::format("node-{}", k), "z", "r"));
  for (int k = 1; k <= 100; ++k) st.snapshot.instances.push_back(map_instance("a", k, fmt::format("node-{}", k), 160 * (k % 11), 0));
  ClusterMap m = build_cluster_map(st, k_map_now);
  for (size_t width : {20, 33, 40, 80, 132, 300}) {
    for (bool names : {false, true})
      for (bool color : {false, true}) {
        INFO("width " << width << " names " << names << " color " << color);
        auto lines = map_text_lines(m, MapTextOptions{width, color, names ? MapCells::Names : MapCells::Compact});
        size_t cells = 0, rows = 0;
        for (const auto& l : lines) {
          CHECK(display_width(l) <= width);
          if (l.starts_with("  ") && (l.find("__") != std::string::npos || l.find("..") != std::string::npos) &&
              l.find('%') == std::string::npos) {
            ++rows;
            for (size_t k = 0; k < 10; ++k) cells += map_count(l, std::string(2, level_char(static_cast<int>(k))));
          }
        }
        CHECK(cells == 100);
        size_t cell_width = names ? std::min<size_t>(std::string("node-100").size() + 3, width - 2) : 2;
        size_t per_row = cells_per_row(width, 2, cell_width, names ? 2 : 1);
        CHECK(rows == (100 + per_row - 1) / per_row);
      }
  }
}

TEST_CASE("map: names in the cells when they take few rows, else two characters a node", "[map]") {
  ClusterState st;
  for (int k = 1; k <= 60; ++k) st.snapshot.nodes.push_back(map_node(fmt::format("node-{}", k), "z", fmt::format("r{}", k % 3)));
  ClusterMap m = build_cluster_map(st, k_map_now);
  // 80 columns: 6 named cells a row, 4 rows a rack of 20; 40 columns: 3 a row, 21 rows.
  std::string named = map_text(m, MapTextOptions{80, false, MapCells::Auto});
  CHECK(named.find("node-1  __  node-4  __") != std::string::npos);  // Names padded to the longest.
  CHECK(map_text(m, MapTextOptions{40, false, MapCells::Auto}).find("node-1  __") != std::string::npos);
  // 20 columns: 1 a row, 60 rows: two characters a node.
  std::string compact = map_text(m, MapTextOptions{20, false, MapCells::Auto});
  CHECK(compact.find("node-1") == std::string::npos);
  CHECK(compact.find("__ __") != std::string::npos);
}

TEST_CASE("map: colour only when asked, and it carries nothing the characters lack", "[map]") {
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now, map_titled("small"));
  std::string plain = map_text(m, {});
  std::string coloured = map_text(m, MapTextOptions{80, true, MapCells::Compact});
  CHECK(plain.find('\033') == std::string::npos);
  CHECK(coloured.find("\033[48;5;") != std::string::npos);
  // Without the colour sequences, the coloured map is the plain one.
  std::string stripped;
  for (size_t i = 0; i < coloured.size(); ++i) {
    if (coloured[i] == '\033') {
      i = coloured.find('m', i);
      continue;
    }
    stripped += coloured[i];
  }
  CHECK(stripped == plain);
}

TEST_CASE("map: the text map of a small cluster", "[map][golden]") {
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now, map_titled("small"));
  gaia::test::check_golden("map/small.txt", map_text(m, MapTextOptions{80, false, MapCells::Compact}));
  gaia::test::check_golden("map/small_names_40.txt", map_text(m, MapTextOptions{40, false, MapCells::Names}));
  MapOptions usage = map_titled("small");
  usage.measure = MapMeasure::Usage;
  gaia::test::check_golden("map/small_usage.txt", map_text(build_cluster_map(map_small_cluster(), k_map_now, usage), {}));
}

TEST_CASE("map: an empty cluster says so", "[map]") {
  ClusterMap m = build_cluster_map(ClusterState{}, k_map_now, map_titled("none"));
  std::string text = map_text(m, {});
  CHECK(text.find("no nodes") != std::string::npos);
  std::string svg = map_svg(m);
  map_check_well_formed(svg);
  CHECK(map_count(svg, "<rect class=\"node\"") == 0);
}

TEST_CASE("map: the SVG is well formed, one rectangle per node, names escaped", "[map][svg]") {
  ClusterState st = map_small_cluster();
  st.snapshot.nodes[0].name = "n1<&>\"'";
  st.snapshot.instances[0].node = "n1<&>\"'";
  st.snapshot.nodes[1].rack = "r<1>&";
  ClusterMap m = build_cluster_map(st, k_map_now, map_titled("a&b <c>"));
  std::string svg = map_svg(m);
  map_check_well_formed(svg);
  CHECK(map_count(svg, "<rect class=\"node\"") == m.nodes.size());
  CHECK(map_count(svg, "<g class=\"rack\"") == m.racks.size());
  CHECK(svg.find("n1&lt;&amp;&gt;&quot;&apos;") != std::string::npos);
  CHECK(svg.find("n1<") == std::string::npos);
  CHECK(svg.find("a&amp;b &lt;c&gt;") != std::string::npos);
  CHECK(svg.find("r&lt;1&gt;&amp;") != std::string::npos);
  CHECK(svg.find("2025-03-04 05:06:07 UTC") != std::string::npos);
  // Every node's name is in a <title> for hover.
  for (const auto& n : m.nodes) CHECK(svg.find("<title>" + xml_escape(n.name)) != std::string::npos);
  CHECK(svg.find("Legend") != std::string::npos);
  CHECK(svg.find("Hot spots (90% or more): 2 nodes") != std::string::npos);
  CHECK(svg.find("Pending: 3 instances") != std::string::npos);

  // A large cluster: small cells without text, still one per node.
  ClusterState big;
  for (int k = 0; k < 450; ++k) big.snapshot.nodes.push_back(map_node(fmt::format("m{}", k), "z", fmt::format("r{}", k / 40)));
  big.snapshot.nodes[3].state = NodeState::Down;
  ClusterMap bm = build_cluster_map(big, k_map_now);
  std::string bsvg = map_svg(bm);
  map_check_well_formed(bsvg);
  CHECK(map_count(bsvg, "<rect class=\"node\"") == 450);
  CHECK(map_count(bsvg, "<g class=\"rack\"") == 12);
}

TEST_CASE("map: JSON has every node with its rack, figures, level and instances", "[map][json]") {
  ClusterMap m = build_cluster_map(map_small_cluster(), k_map_now, map_titled("small"));
  nlohmann::json j = map_json(m);
  CHECK(j["cluster"] == "small");
  CHECK(j["time"] == "2025-03-04T05:06:07.000Z");
  CHECK(j["by"] == "allocation");
  REQUIRE(j["nodes"].size() == 7);
  const auto& n1 = j["nodes"][0];
  CHECK(n1["name"] == "n1");
  CHECK(n1["rack"] == "z1/r1");
  CHECK(n1["allocated"]["cpu_millis"] == 15000);
  CHECK(n1["capacity"]["cpu_millis"] == 16000);
  CHECK(n1["capacity"]["memory_bytes"] == 64 * k_map_gi);
  CHECK(n1["level"] == 9);
  CHECK(n1["usage"].is_null());
  CHECK(n1["instances"] == nlohmann::json::array({"0.web.web.default"}));
  CHECK(j["nodes"][6]["name"] == "n6");
  CHECK(j["nodes"][6]["level"].is_null());  // Down.
  CHECK(j["racks"].size() == 4);
  CHECK(j["racks"][3]["name"] == "");
  CHECK(j["pending"]["count"] == 3);
  CHECK(j["pending"]["largest"][0]["instance"] == "0.big.big.default");
  REQUIRE(j["hot_spots"].size() == 2);
  CHECK(j["hot_spots"][0]["name"] == "n5");
}
