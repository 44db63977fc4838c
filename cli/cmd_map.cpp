// gaia map [--by allocation|usage] [--width N] [--names|--compact] [--hot PCT] [--svg FILE]
// [-o text|json] [--watch [--interval D]]: the cluster's nodes by rack as a grid of cells
// coloured by allocation or usage, with pending work and hot spots (cli/cluster_map.hpp
// draws it; this file reads the store, picks the width and colour, and writes).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "cli/cluster_map.hpp"
#include "cli/context.hpp"
#include "cli/interrupt.hpp"
#include "cli/table.hpp"
#include "controllers/reconcile.hpp"

namespace gaia::cli {

namespace {

struct MapArgs {
  std::string by = "allocation";
  size_t width = 0;  // 0: the terminal's, else 80.
  bool names = false;
  bool compact = false;
  double hot = 90;
  std::string svg;
  std::string output = "text";
  bool watch = false;
  std::string interval = "2s";
};

// The cluster's name (`cluster create` records it), else the context's.
std::string map_title(const ClusterState& state, const Session& s) {
  auto it = state.settings.find(keys::k_cluster_name_setting);
  if (it != state.settings.end() && it->second.is_string() && !it->second.get<std::string>().empty())
    return it->second.get<std::string>();
  return "(context " + s.context.name + ")";
}

// Writes `text` to `path` through a temporary file renamed over it, so a viewer
// reloading the file during --watch never reads half of one.
Result<void> write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out)
      return fail(Diagnostic{{path.string()}, "--svg", "cannot write the file",
                             "check that its folder exists and that you may write there"});
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string why = ec.message();  // Before the clean-up reuses `ec`.
    std::filesystem::remove(tmp, ec);
    return fail(Diagnostic{{path.string()}, "--svg", "cannot write the file: " + why,
                           "give a file path whose folder exists and that you may write there"});
  }
  return {};
}

size_t map_width(const MapArgs& a) {
  if (a.width > 0) return a.width;
  size_t w = table_options_for(stdout).max_width;
  return w > 0 ? w : 80;
}

// One picture: the map of the state now, to stdout (text or JSON) and to --svg.
int draw(const Globals& g, const MapArgs& a, Session& s, const ClusterState& state, bool first_frame, bool clear) {
  MapOptions options;
  options.measure = a.by == "usage" ? MapMeasure::Usage : MapMeasure::Allocation;
  options.hot = a.hot / 100.0;
  options.title = map_title(state, s);
  ClusterMap map = build_cluster_map(state, to_millis(s.clock.now()), options);
  if (!a.svg.empty()) {
    if (auto w = write_file(a.svg, map_svg(map)); !w) return report(g, w.error());
  }
  if (a.output == "json") {
    // One document; with --watch one per line, as `events -o json` prints events.
    std::string doc = a.watch ? map_json(map).dump() : map_json(map).dump(2);
    std::fputs((doc + "\n").c_str(), stdout);
  } else if (!a.svg.empty()) {
    if (first_frame && !g.quiet)
      fmt::print("wrote {}: {} node(s) in {} rack(s){}\n", a.svg, map.nodes.size(), map.racks.size(),
                 a.watch ? fmt::format(", again every {}", a.interval) : "");
  } else {
    MapTextOptions t;
    t.width = map_width(a);
    t.color = g.use_color(stdout);
    t.cells = a.names ? MapCells::Names : a.compact ? MapCells::Compact : MapCells::Auto;
    std::string text = map_text(map, t);
    // On a terminal each picture replaces the one before, as watch(1) does; to a pipe
    // or a file they follow each other, a blank line apart.
    if (clear) text = "\033[H\033[2J" + text;
    else if (!first_frame) text = "\n" + text;
    std::fputs(text.c_str(), stdout);
  }
  std::fflush(stdout);
  return k_ok;
}

int run_map(const Globals& g, const MapArgs& a) {
  auto interval = positive_duration("--interval", a.interval);
  if (!interval) return report(g, interval.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  if (!a.watch) {
    auto state = s.state->load();
    if (!state) return report(g, state.error());
    return draw(g, a, s, *state, true, false);
  }
  // Until Ctrl-C (or SIGTERM), which ends the loop cleanly with exit 0.
  catch_stop_signals(true);
  const bool clear = a.output == "text" && a.svg.empty() && isatty(fileno(stdout));
  bool first = true;
  std::string outage;
  while (!stop_requested()) {
    auto read = load_for_watch(g, s, outage);
    if (!read) continue;
    auto& state = *read;
    if (!state) return report(g, state.error());
    if (int rc = draw(g, a, s, *state, first, clear); rc != k_ok) return rc;
    first = false;
    nap(*interval);
  }
  return k_ok;
}

}  // namespace

void register_map(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<MapArgs>();
  auto* cmd = app.add_subcommand("map", "Draw the cluster's nodes by rack, coloured by allocation or usage");
  cmd->add_option("--by", a->by,
                  "allocation (requests over capacity, the default) or usage (observed usage over capacity); "
                  "a node's level is the larger of cpu and memory")
      ->check(CLI::IsMember({"allocation", "usage"}))
      ->capture_default_str();
  cmd->add_option("--width", a->width, "Columns to fit (default: the terminal's, else 80)")
      ->check(CLI::Range(static_cast<size_t>(20), static_cast<size_t>(10000)))
      ->type_name("N");
  auto* names = cmd->add_flag("--names", a->names,
                              "Write each node's name in its cell (the default when that takes at most 30 rows)");
  cmd->add_flag("--compact", a->compact, "Cells of the level alone, two characters each")->excludes(names);
  cmd->add_option("--hot", a->hot, "A node at or above this percentage is a hot spot")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str()
      ->type_name("PCT");
  cmd->add_option("--svg", a->svg, "Also write the picture as an SVG file (a report; the node's figures on hover)")
      ->type_name("FILE");
  cmd->add_option("-o,--output", a->output, "text or json (the data: every node, pending work, hot spots)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("-w,--watch", a->watch, "Draw again every --interval until interrupted (Ctrl-C)");
  cmd->add_option("--interval", a->interval, "With --watch: time between pictures (e.g. 500ms, 5s)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            auto d = positive_duration("--interval", v);
            return d ? std::string() : d.error().front().message;
          },
          "DURATION"))
      ->capture_default_str()
      ->type_name("D");
  cmd->footer(
      "Examples:\n"
      "  gaia map                          # nodes by rack, coloured by allocation\n"
      "  gaia map --by usage --watch       # observed usage, redrawn every 2s\n"
      "  gaia map --compact --width 120    # two characters a node, for large clusters\n"
      "  gaia map --svg cluster.svg        # the same picture for a report\n"
      "  gaia map -o json | jq '.hot_spots'\n"
      "Cells: _ . : - = + * # % @ for under 10% up to 90% and more; #/ cordoned or draining, XX down,\n"
      "?? no usage reported (--by usage).\n"
      "Exit codes: 0 ok, 1 error (no store, the SVG file cannot be written), 2 bad flags.");
  cmd->callback([&g, a, cmd, code] {
    if (cmd->count("--interval") > 0 && !a->watch) {
      report_error(g, "--interval only applies with --watch", "add --watch, or drop --interval");
      *code = k_usage;
      return;
    }
    *code = run_map(g, *a);
  });
}

}  // namespace gaia::cli
