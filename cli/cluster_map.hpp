#pragma once
// The cluster map of `gaia map` (docs/cli.md#gaia-map), without any I/O: a ClusterState
// becomes a model (nodes grouped by rack, each with a level of allocation or usage;
// pending work; hot spots), and the model becomes text lines for a terminal of a given
// width, an SVG document, or JSON. cmd_map.cpp reads the store and prints; everything
// here is a pure function of its arguments, so it is tested without a store.
//
// A node's level is its fraction in tenths: the larger of cpu and memory, requests
// over capacity (`--by allocation`, the default) or observed usage over capacity (`--by
// usage`), 0 below 10% up to 9 at 90% and above. The larger of the two, not their mean,
// because a node full on memory takes no more work however idle its cpu is.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/state.hpp"

namespace gaia::cli {

enum class MapMeasure { Allocation, Usage };

// What a cell shows besides its level.
enum class MapCell {
  Level,     // Ready: its level.
  Cordoned,  // Cordoned or draining: its level, closed to new work.
  Down,      // Down: nothing runs there.
  Unknown,   // --by usage, and none of its instances reports usage.
};

struct MapNode {
  std::string name;
  std::string rack;  // The rack's group name ("z1/r1"); "" without a rack.
  NodeState state = NodeState::Ready;
  bool draining = false;
  Resources capacity;
  Resources allocated;  // Requests of the instances it holds.
  // Observed usage: reported usage, with instances that report none counted at their
  // request (as runtime preemption counts them). Unset when none of them reports any.
  std::optional<Resources> usage;
  int usage_reported = 0;  // Instances reporting usage, of `instances.size()`.
  std::vector<std::string> instances;  // Keys of the instances it holds, sorted.
  // The fractions of the measure shown (allocation or usage), and the larger one.
  double cpu = 0, memory = 0, fraction = 0;
  int level = 0;  // 0..9; meaningless when cell is Down or Unknown.
  MapCell cell = MapCell::Level;
};

struct MapRack {
  std::string name;  // "z1/r1", "r1", or "" for the nodes without a rack.
  std::vector<size_t> nodes;  // Indexes into ClusterMap::nodes, in natural name order.
  Resources capacity, allocated;
  Resources used;  // Sum of the usage of the nodes that have one.
  int hot = 0, empty = 0;
};

struct PendingInstance {
  std::string key;
  Resources request;
  std::string priority;
  std::string reason;
};

struct MapOptions {
  MapMeasure measure = MapMeasure::Allocation;
  double hot = 0.9;       // A node at or above this fraction is a hot spot.
  size_t largest = 5;     // Pending instances listed, largest first.
  std::string title;      // The cluster's name (or the context's).
};

struct ClusterMap {
  std::string title;
  int64_t time_ms = 0;
  MapMeasure measure = MapMeasure::Allocation;
  double hot_threshold = 0.9;
  std::vector<MapNode> nodes;  // Grouped by rack, in rack order.
  std::vector<MapRack> racks;  // Racks in natural order, the one without a name last.
  Resources capacity, allocated, used;
  int instances = 0;  // Instances on nodes.
  // Instances on nodes that report no usage (counted at their request by --by usage).
  int usage_unreported = 0;
  // Pending instances: how many, what they ask for in all, and the largest (by the
  // largest share of the biggest node's cpu, memory or gpu they ask for).
  int pending = 0;
  Resources pending_request;
  std::vector<PendingInstance> largest_pending;
  std::vector<size_t> hot;  // Nodes at or above the threshold, the fullest first.
};

ClusterMap build_cluster_map(const ClusterState& state, int64_t now_ms, const MapOptions& options = {});

// "allocation" or "usage".
std::string_view measure_name(MapMeasure m);
// The level of a fraction: 0 below 10%, 9 at 90% and above.
int map_level(double fraction);
// The character of a level in the text map: "_.:-=+*#%@"[level].
char level_char(int level);

// How many cells of `cell_width` columns, `gap` columns apart, fit on a line of `width`
// columns after `indent` (at least one).
size_t cells_per_row(size_t width, size_t indent, size_t cell_width, size_t gap = 1);

// How the cells are drawn: the level alone (two characters, for large clusters), or
// with the node's name before it; Auto writes names when the map with names takes at
// most k_auto_name_rows rows of cells.
enum class MapCells { Auto, Names, Compact };
inline constexpr size_t k_auto_name_rows = 30;

struct MapTextOptions {
  size_t width = 80;
  bool color = false;  // ANSI colours (background by level) around the characters.
  MapCells cells = MapCells::Compact;
};

// The map for a terminal: a title, one block per rack (a summary line and its cells in
// rows that fit `width`), the legend, pending work and hot spots. No line is wider than
// `width` columns (colour sequences take none).
std::vector<std::string> map_text_lines(const ClusterMap& map, const MapTextOptions& options);
std::string map_text(const ClusterMap& map, const MapTextOptions& options);

// The same picture as a standalone SVG document: a title with the cluster's name and
// the time, each rack a labelled group (<g>) of one rectangle per node filled on a
// colour scale, the node's name and figures in its <title> (shown on hover), a legend,
// pending work and hot spots.
std::string map_svg(const ClusterMap& map);

// The data of the map (docs/cli.md#gaia-map has the fields).
nlohmann::json map_json(const ClusterMap& map);

// Escapes & < > " ' for XML text and attributes.
std::string xml_escape(std::string_view s);

}  // namespace gaia::cli
