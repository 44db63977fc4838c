#include "cli/cluster_map.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "cli/cluster_view.hpp"
#include "cli/table.hpp"
#include "lib/cluster_layout.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

// Helpers of this file only; a named namespace, since the unity build puts several of
// cli/'s files in one translation unit.
namespace cluster_map_detail {

constexpr std::string_view k_levels = "_.:-=+*#%@";

// Colours of the levels, light (little used) to dark red (full): ColorBrewer's YlOrRd
// after a light grey for nodes under 10%. The terminal's are the nearest of the xterm
// 256-colour palette, with the text in black or white to stay readable on them.
constexpr const char* k_svg_fill[10] = {"#f2f2f2", "#ffffcc", "#ffeda0", "#fed976", "#feb24c",
                                        "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026", "#800026"};
constexpr int k_term_bg[10] = {238, 230, 229, 222, 215, 209, 202, 196, 160, 88};
constexpr int k_term_fg[10] = {250, 16, 16, 16, 16, 16, 16, 231, 231, 231};
constexpr const char* k_svg_down = "#5a5a5a";

std::string topology(const Node& n, const std::string& field, const char* label) {
  if (!field.empty()) return field;
  auto it = n.labels.find(label);
  return it == n.labels.end() ? std::string() : it->second;
}

// The rack group of a node as the scheduler's topology spread counts racks: the rack
// within its zone (rack r1 of zone z1 and rack r1 of zone z2 are two racks).
std::string rack_of(const Node& n) {
  std::string rack = topology(n, n.rack, "rack");
  if (rack.empty()) return "";
  std::string zone = topology(n, n.zone, "zone");
  return zone.empty() ? rack : zone + "/" + rack;
}

double share(int64_t used, int64_t capacity) {
  if (capacity <= 0) return used > 0 ? 1.0 : 0.0;
  return static_cast<double>(used) / static_cast<double>(capacity);
}

void add(Resources& into, const Resources& r) {
  into.cpu_millis += r.cpu_millis;
  into.memory_bytes += r.memory_bytes;
  into.gpu += r.gpu;
  into.disk_bytes += r.disk_bytes;
}

int pct(double fraction) { return static_cast<int>(std::floor(fraction * 100.0 + 1e-9)); }

std::string display_time(int64_t ms) {
  std::string t = format_rfc3339(Clock::time_point(std::chrono::milliseconds(ms)));
  if (t.size() >= 19) t = t.substr(0, 10) + " " + t.substr(11, 8) + " UTC";
  return t;
}

std::string rack_label(const ClusterMap& m, const MapRack& r) {
  if (!r.name.empty()) return "rack " + r.name;
  return m.racks.size() == 1 ? "all nodes (no rack)" : "no rack";
}

const Resources& measured(const ClusterMap& m, const MapRack& r) {
  return m.measure == MapMeasure::Usage ? r.used : r.allocated;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "cpu 38% · memory 52%" of a rack, with how many nodes are empty and hot.
std::string rack_summary(const ClusterMap& m, const MapRack& r, std::string_view sep) {
  const Resources& u = measured(m, r);
  std::string s = fmt::format("{}{}{}{}cpu {}%{}memory {}%", rack_label(m, r), sep, plural(r.nodes.size(), "node", "nodes"),
                              sep, pct(share(u.cpu_millis, r.capacity.cpu_millis)), sep,
                              pct(share(u.memory_bytes, r.capacity.memory_bytes)));
  if (r.capacity.gpu > 0) s += fmt::format("{}gpu {}/{}", sep, u.gpu, r.capacity.gpu);
  if (r.empty > 0) s += fmt::format("{}{} empty", sep, r.empty);
  if (r.hot > 0) s += fmt::format("{}{} hot", sep, r.hot);
  return s;
}

// Cores: whole when exact, with one decimal from one core up, else millicores.
std::string cores(int64_t m) {
  if (m % 1000 == 0) return std::to_string(m / 1000);
  if (m >= 1000) return fmt::format("{:.1f}", static_cast<double>(m) / 1000.0);
  return std::to_string(m) + "m";
}

std::string request_text(const Resources& r) {
  std::string s = fmt::format("cpu {}, memory {}", cores(r.cpu_millis), format_bytes_short(r.memory_bytes));
  if (r.gpu > 0) s += fmt::format(", gpu {}", r.gpu);
  return s;
}

std::string cell_symbol(const MapNode& n) {
  switch (n.cell) {
    case MapCell::Down: return "XX";
    case MapCell::Unknown: return "??";
    case MapCell::Cordoned: return std::string(1, level_char(n.level)) + "/";
    case MapCell::Level: break;
  }
  return std::string(2, level_char(n.level));
}

std::string paint(const std::string& text, int level, bool color) {
  if (!color) return text;
  return fmt::format("\033[48;5;{}m\033[38;5;{}m{}\033[0m", k_term_bg[level], k_term_fg[level], text);
}

std::string paint_cell(const MapNode& n, bool color) {
  std::string sym = cell_symbol(n);
  if (!color) return sym;
  if (n.cell == MapCell::Down) return "\033[1;31m" + sym + "\033[0m";
  if (n.cell == MapCell::Unknown) return "\033[2m" + sym + "\033[0m";
  return paint(sym, n.level, true);
}

// Lines of `text` at most `width` wide, continued lines indented by `indent`.
void wrapped(std::vector<std::string>& out, const std::string& text, size_t width, size_t indent = 2) {
  auto first = wrap_to_width(text, width);
  if (first.size() <= 1) {
    out.push_back(truncate_to_width(text, width));
    return;
  }
  out.push_back(first[0]);
  std::string rest = text.substr(std::min(text.size(), first[0].size()));
  while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
  std::string pad(indent, ' ');
  size_t inner = width > indent + 10 ? width - indent : width;
  for (auto& l : wrap_to_width(rest, inner)) out.push_back(truncate_to_width((inner == width ? "" : pad) + l, width));
}

// Items packed onto lines of at most `width` columns, two spaces apart, after `lead`
// (the first line) or as many blanks (the others).
void packed(std::vector<std::string>& out, const std::string& lead, const std::vector<std::string>& items, size_t width) {
  std::string line = lead;
  size_t used = display_width(lead);
  bool first_on_line = true;
  for (const auto& item : items) {
    size_t w = display_width(item);
    if (!first_on_line && used + 2 + w > width) {
      out.push_back(truncate_to_width(line, width));
      line = std::string(display_width(lead), ' ');
      used = display_width(lead);
      first_on_line = true;
    }
    if (!first_on_line) {
      line += "  ";
      used += 2;
    }
    line += item;
    used += w;
    first_on_line = false;
  }
  out.push_back(truncate_to_width(line, width));
}

std::string level_range(int level) {
  if (level == 9) return "90%+";
  return fmt::format("{}-{}%", level * 10, level * 10 + 9);
}

std::string svg_level_range(int level) {
  if (level == 0) return "under 10%";
  if (level == 9) return "90% and more";
  return fmt::format("{}\u2013{}%", level * 10, level * 10 + 9);
}

std::string measure_text(MapMeasure m) {
  return m == MapMeasure::Usage ? "the larger of cpu and memory used over capacity"
                                : "the larger of cpu and memory requested over capacity";
}

std::string node_figures(const MapNode& n, std::string_view sep) {
  const Resources& a = n.allocated;
  std::string s = fmt::format("cpu {}{}memory {}", cpu_cell(a.cpu_millis, n.capacity.cpu_millis), sep,
                              bytes_cell(a.memory_bytes, n.capacity.memory_bytes));
  if (n.capacity.gpu > 0) s += fmt::format("{}gpu {}", sep, count_cell(a.gpu, n.capacity.gpu));
  if (n.usage)
    s += fmt::format("{}used: cpu {} ({}%), memory {} ({}%)", sep, cores(n.usage->cpu_millis),
                     pct(share(n.usage->cpu_millis, n.capacity.cpu_millis)), format_bytes_short(n.usage->memory_bytes),
                     pct(share(n.usage->memory_bytes, n.capacity.memory_bytes)));
  else if (!n.instances.empty())
    s += fmt::format("{}used: not reported", sep);
  return s;
}

// "ready", "cordoned", "draining", "down".
std::string state_text(const MapNode& n) {
  if (n.draining) return "draining";
  std::string s(node_state_name(n.state));
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace cluster_map_detail

using namespace cluster_map_detail;

std::string_view measure_name(MapMeasure m) { return m == MapMeasure::Usage ? "usage" : "allocation"; }

int map_level(double fraction) {
  if (!(fraction > 0)) return 0;
  return std::clamp(static_cast<int>(std::floor(fraction * 10.0 + 1e-9)), 0, 9);
}

char level_char(int level) { return k_levels[static_cast<size_t>(std::clamp(level, 0, 9))]; }

size_t cells_per_row(size_t width, size_t indent, size_t cell_width, size_t gap) {
  if (width <= indent + cell_width) return 1;
  return std::max<size_t>(1, (width - indent + gap) / (cell_width + gap));
}

ClusterMap build_cluster_map(const ClusterState& state, int64_t now_ms, const MapOptions& options) {
  const Snapshot& s = state.snapshot;
  ClusterMap m;
  m.title = options.title;
  m.time_ms = now_ms;
  m.measure = options.measure;
  m.hot_threshold = options.hot;

  std::map<std::string, size_t> node_at;
  std::vector<MapNode> nodes;
  for (const Node* n : sorted_nodes(s)) {
    MapNode x;
    x.name = n->name;
    x.rack = rack_of(*n);
    x.state = n->state;
    x.draining = n->draining;
    x.capacity = n->capacity;
    node_at[n->name] = nodes.size();
    nodes.push_back(std::move(x));
  }
  std::vector<Resources> usage(nodes.size());
  for (const auto& i : s.instances) {
    if (i.state == InstanceState::Pending) {
      ++m.pending;
      add(m.pending_request, i.request);
      continue;
    }
    if (!occupies_node(i)) continue;
    auto it = node_at.find(i.node);
    if (it == node_at.end()) continue;
    MapNode& x = nodes[it->second];
    add(x.allocated, i.request);
    x.instances.push_back(i.key());
    if (i.usage) {
      add(usage[it->second], *i.usage);
      ++x.usage_reported;
    } else {
      add(usage[it->second], i.request);  // As runtime preemption counts it.
    }
  }
  for (size_t k = 0; k < nodes.size(); ++k) {
    MapNode& x = nodes[k];
    std::sort(x.instances.begin(), x.instances.end(), natural_less);
    m.instances += static_cast<int>(x.instances.size());
    m.usage_unreported += static_cast<int>(x.instances.size()) - x.usage_reported;
    if (x.instances.empty() || x.usage_reported > 0) x.usage = usage[k];
    const Resources* shown = &x.allocated;
    if (options.measure == MapMeasure::Usage) shown = x.usage ? &*x.usage : nullptr;
    if (shown) {
      x.cpu = share(shown->cpu_millis, x.capacity.cpu_millis);
      x.memory = share(shown->memory_bytes, x.capacity.memory_bytes);
      x.fraction = std::max(x.cpu, x.memory);
    }
    x.level = map_level(x.fraction);
    if (x.state == NodeState::Down) x.cell = MapCell::Down;
    else if (!shown) x.cell = MapCell::Unknown;
    else if (x.state == NodeState::Cordoned || x.draining) x.cell = MapCell::Cordoned;
  }

  // Racks in natural order, the nodes without one last.
  std::map<std::string, std::vector<size_t>> by_rack;
  for (size_t k = 0; k < nodes.size(); ++k) by_rack[nodes[k].rack].push_back(k);
  std::vector<std::string> names;
  for (const auto& [name, _] : by_rack) names.push_back(name);
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    if (a.empty() != b.empty()) return b.empty();
    return natural_less(a, b);
  });
  for (const auto& name : names) {
    MapRack r;
    r.name = name;
    for (size_t k : by_rack[name]) {
      const MapNode& x = nodes[k];
      r.nodes.push_back(m.nodes.size());
      add(r.capacity, x.capacity);
      add(r.allocated, x.allocated);
      if (x.usage) add(r.used, *x.usage);
      if (x.instances.empty()) ++r.empty;
      bool measured_node = x.cell != MapCell::Down && x.cell != MapCell::Unknown;
      if (measured_node && x.fraction >= options.hot - 1e-9) {
        ++r.hot;
        m.hot.push_back(m.nodes.size());
      }
      m.nodes.push_back(x);
    }
    add(m.capacity, r.capacity);
    add(m.allocated, r.allocated);
    add(m.used, r.used);
    m.racks.push_back(std::move(r));
  }
  std::stable_sort(m.hot.begin(), m.hot.end(), [&](size_t a, size_t b) { return m.nodes[a].fraction > m.nodes[b].fraction; });

  // The largest pending instances: by the largest share of the biggest node they ask for.
  Resources biggest;
  for (const auto& n : s.nodes) {
    biggest.cpu_millis = std::max(biggest.cpu_millis, n.capacity.cpu_millis);
    biggest.memory_bytes = std::max(biggest.memory_bytes, n.capacity.memory_bytes);
    biggest.gpu = std::max(biggest.gpu, n.capacity.gpu);
  }
  auto size_of = [&](const Instance& i) {
    return std::max({share(i.request.cpu_millis, biggest.cpu_millis), share(i.request.memory_bytes, biggest.memory_bytes),
                     i.request.gpu > 0 ? share(i.request.gpu, biggest.gpu) : 0.0});
  };
  std::vector<const Instance*> pending;
  for (const auto& i : s.instances)
    if (i.state == InstanceState::Pending) pending.push_back(&i);
  std::stable_sort(pending.begin(), pending.end(), [&](const Instance* a, const Instance* b) {
    double sa = size_of(*a), sb = size_of(*b);
    if (sa != sb) return sa > sb;
    return natural_less(a->key(), b->key());
  });
  for (size_t k = 0; k < pending.size() && k < options.largest; ++k)
    m.largest_pending.push_back(
        {pending[k]->key(), pending[k]->request, pending[k]->priority.to_string(), pending[k]->pending_reason});
  return m;
}

std::vector<std::string> map_text_lines(const ClusterMap& m, const MapTextOptions& o) {
  const size_t width = std::max<size_t>(o.width, 20);
  std::vector<std::string> out;
  std::string what = m.measure == MapMeasure::Usage ? "used" : "allocated";
  wrapped(out, fmt::format("{} · {} · {}", m.title.empty() ? "cluster" : "cluster " + m.title, measure_name(m.measure),
                           display_time(m.time_ms)),
          width);
  if (m.nodes.empty()) {
    out.push_back("no nodes: create a cluster with `gaia cluster create`");
    return out;
  }
  const Resources& u = m.measure == MapMeasure::Usage ? m.used : m.allocated;
  wrapped(out,
          fmt::format("{} in {}, {}", plural(m.nodes.size(), "node", "nodes"), plural(m.racks.size(), "rack", "racks"),
                      plural(m.instances, "instance", "instances")),
          width);
  std::string totals = fmt::format("{}: cpu {}, memory {}", what, cpu_cell(u.cpu_millis, m.capacity.cpu_millis),
                                   bytes_cell(u.memory_bytes, m.capacity.memory_bytes));
  if (m.capacity.gpu > 0) totals += fmt::format(", gpu {}", count_cell(u.gpu, m.capacity.gpu));
  wrapped(out, totals, width);
  if (m.measure == MapMeasure::Usage && m.usage_unreported > 0) {
    bool none = m.usage_unreported == m.instances;
    wrapped(out,
            none ? "note: no instance reports usage yet (?? nodes); `gaia sim usage` sets it on the sim backend"
                 : fmt::format("note: {} of {} instances report no usage: nodes where none does are ??, and "
                               "elsewhere they count at their request",
                               m.usage_unreported, m.instances),
            width);
  }

  // The cells: the level twice, or with the node's name before it.
  const size_t indent = 2;
  size_t name_width = 0;
  for (const auto& n : m.nodes) name_width = std::max(name_width, display_width(n.name));
  const size_t named_width = std::min(name_width + 3, width - indent), named_gap = 2;
  bool names = o.cells == MapCells::Names;
  if (o.cells == MapCells::Auto) {
    size_t per_row = cells_per_row(width, indent, named_width, named_gap), rows = 0;
    for (const auto& r : m.racks) rows += (r.nodes.size() + per_row - 1) / per_row;
    names = rows <= k_auto_name_rows;
  }
  size_t cell_width = names ? named_width : 2;
  size_t gap = names ? named_gap : 1;
  size_t per_row = cells_per_row(width, indent, cell_width, gap);
  for (const auto& r : m.racks) {
    out.push_back("");
    wrapped(out, rack_summary(m, r, " · "), width);
    for (size_t start = 0; start < r.nodes.size(); start += per_row) {
      std::string line(indent, ' ');
      for (size_t k = start; k < r.nodes.size() && k < start + per_row; ++k) {
        const MapNode& n = m.nodes[r.nodes[k]];
        if (k > start) line.append(gap, ' ');
        if (names) {
          std::string name = truncate_to_width(n.name, cell_width - 3);
          line += name + std::string(cell_width - 3 - display_width(name) + 1, ' ');
        }
        line += paint_cell(n, o.color);
      }
      out.push_back(line);
    }
  }

  out.push_back("");
  wrapped(out,
          fmt::format("legend: a cell per node, {}; level = max(cpu, memory) {} / capacity",
                      names ? "after its name" : "in name order within its rack (names: a wider terminal, or -o json)",
                      m.measure == MapMeasure::Usage ? "used" : "requested"),
          width);
  std::vector<std::string> items;
  for (int l = 0; l < 10; ++l) items.push_back(paint(std::string(2, level_char(l)), l, o.color) + " " + level_range(l));
  packed(out, "  ", items, width);
  std::vector<std::string> marks = {paint("#/", 7, o.color) + " cordoned or draining",
                                    (o.color ? "\033[1;31mXX\033[0m" : std::string("XX")) + " down"};
  if (m.measure == MapMeasure::Usage) marks.push_back(std::string(o.color ? "\033[2m??\033[0m" : "??") + " no usage reported");
  packed(out, "  ", marks, width);

  out.push_back("");
  if (m.pending == 0) {
    out.push_back("pending: none");
  } else {
    wrapped(out, fmt::format("pending: {} asking for {}{}", plural(m.pending, "instance", "instances"),
                             request_text(m.pending_request), m.largest_pending.empty() ? "" : "; the largest:"),
            width);
    // Each on its line, and why it waits on the next, wrapped.
    for (const auto& p : m.largest_pending) {
      out.push_back(truncate_to_width(fmt::format("  {}  {}, {}", p.key, request_text(p.request), p.priority), width));
      if (!p.reason.empty())
        for (const auto& l : wrap_to_width(p.reason, width > 14 ? width - 6 : width))
          out.push_back(truncate_to_width("      " + l, width));
    }
    if (static_cast<size_t>(m.pending) > m.largest_pending.size())
      out.push_back(truncate_to_width(
          fmt::format("  ... and {} more (`gaia get instances` lists them)", m.pending - static_cast<int>(m.largest_pending.size())),
          width));
  }
  std::string threshold = fmt::format("{}% or more", pct(m.hot_threshold));
  if (m.hot.empty()) {
    out.push_back(truncate_to_width(fmt::format("hot spots ({}): none", threshold), width));
  } else {
    out.push_back(truncate_to_width(fmt::format("hot spots ({}): {}", threshold, plural(m.hot.size(), "node", "nodes")), width));
    constexpr size_t k_shown = 10;
    size_t name_w = 0, rack_w = 0;
    for (size_t k = 0; k < m.hot.size() && k < k_shown; ++k) {
      name_w = std::max(name_w, display_width(m.nodes[m.hot[k]].name));
      rack_w = std::max(rack_w, display_width(m.nodes[m.hot[k]].rack.empty() ? "-" : m.nodes[m.hot[k]].rack));
    }
    for (size_t k = 0; k < m.hot.size() && k < k_shown; ++k) {
      const MapNode& n = m.nodes[m.hot[k]];
      std::string rack = n.rack.empty() ? "-" : n.rack;
      std::string line = fmt::format("  {:<{}}  {:<{}}  cpu {}%  memory {}%  {}", n.name, name_w, rack, rack_w, pct(n.cpu),
                                     pct(n.memory), plural(n.instances.size(), "instance", "instances"));
      if (n.cell == MapCell::Cordoned) line += fmt::format("  ({})", state_text(n));
      out.push_back(truncate_to_width(line, width));
    }
    if (m.hot.size() > k_shown)
      out.push_back(truncate_to_width(fmt::format("  ... and {} more (-o json lists them)", m.hot.size() - k_shown), width));
  }
  return out;
}

std::string map_text(const ClusterMap& map, const MapTextOptions& options) {
  std::string out;
  for (const auto& l : map_text_lines(map, options)) {
    out += l;
    out += '\n';
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string map_svg(const ClusterMap& m) {
  // Small clusters get cells large enough for the node's name and level; large ones
  // small squares, the name on hover.
  const bool labelled = m.nodes.size() <= 200;
  const int cw = labelled ? 118 : 16, ch = labelled ? 40 : 16, gap = labelled ? 6 : 3;
  const int margin = 20;
  size_t widest = 1;
  for (const auto& r : m.racks) widest = std::max(widest, r.nodes.size());
  const int max_cols = labelled ? 8 : 48;
  const int cols = static_cast<int>(std::min<size_t>(widest, static_cast<size_t>(max_cols)));
  const int width = std::max(760, 2 * margin + cols * (cw + gap) - gap);

  std::string body;
  int y = margin;
  auto text = [&](int x, int ty, int size, const std::string& content, const std::string& extra = "") {
    body += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\"{}>{}</text>\n", x, ty, size, extra, xml_escape(content));
  };
  std::string title = m.title.empty() ? "cluster" : "cluster " + m.title;
  y += 18;
  text(margin, y, 20, fmt::format("{}: {}", title, measure_name(m.measure)), " font-weight=\"bold\"");
  y += 20;
  const Resources& u = m.measure == MapMeasure::Usage ? m.used : m.allocated;
  text(margin, y, 13,
       fmt::format("{} · {} in {}, {}", display_time(m.time_ms), plural(m.nodes.size(), "node", "nodes"),
                   plural(m.racks.size(), "rack", "racks"), plural(m.instances, "instance", "instances")),
       " fill=\"#444\"");
  y += 18;
  std::string totals = fmt::format("{}: cpu {}, memory {}", m.measure == MapMeasure::Usage ? "Used" : "Allocated",
                                   cpu_cell(u.cpu_millis, m.capacity.cpu_millis),
                                   bytes_cell(u.memory_bytes, m.capacity.memory_bytes));
  if (m.capacity.gpu > 0) totals += fmt::format(", gpu {}", count_cell(u.gpu, m.capacity.gpu));
  text(margin, y, 13, totals, " fill=\"#444\"");
  y += 18;
  if (m.measure == MapMeasure::Usage && m.usage_unreported > 0) {
    text(margin, y, 12,
         fmt::format("{} of {} instances report no usage: nodes where none does are white, and elsewhere they count at "
                     "their request.",
                     m.usage_unreported, m.instances),
         " fill=\"#444\"");
    y += 16;
  }
  text(margin, y, 12, "Each cell is a node; its colour: " + measure_text(m.measure) + ".", " fill=\"#444\"");
  y += 12;

  int rack_no = 0;
  for (const auto& r : m.racks) {
    y += 24;
    body += fmt::format("<g class=\"rack\" id=\"rack-{}\">\n", rack_no++);
    text(margin, y, 14, rack_summary(m, r, " · "), " font-weight=\"bold\"");
    y += 8;
    for (size_t k = 0; k < r.nodes.size(); ++k) {
      const MapNode& n = m.nodes[r.nodes[k]];
      int col = static_cast<int>(k % static_cast<size_t>(cols)), row = static_cast<int>(k / static_cast<size_t>(cols));
      int x = margin + col * (cw + gap), ny = y + row * (ch + gap);
      std::string fill = n.cell == MapCell::Down ? k_svg_down : n.cell == MapCell::Unknown ? "#ffffff" : k_svg_fill[n.level];
      std::string stroke = n.cell == MapCell::Cordoned ? " stroke=\"#222\" stroke-width=\"2\" stroke-dasharray=\"5 3\""
                                                       : " stroke=\"#999\" stroke-width=\"1\"";
      std::string tip = fmt::format("{}{}\n{}, {}\n{}\n{}", n.name, n.rack.empty() ? "" : " (rack " + n.rack + ")",
                                    state_text(n), n.cell == MapCell::Unknown ? "usage not reported"
                                                   : n.cell == MapCell::Down    ? "down"
                                                                                : fmt::format("{} {}%", measure_name(m.measure), pct(n.fraction)),
                                    node_figures(n, "\n"), plural(n.instances.size(), "instance", "instances"));
      body += fmt::format("<g class=\"node\"><title>{}</title>\n", xml_escape(tip));
      body += fmt::format("<rect class=\"node\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"{}\"{}/>\n", x, ny, cw,
                          ch, fill, stroke);
      bool dark = n.cell == MapCell::Down || (n.cell != MapCell::Unknown && n.level >= 6);
      std::string ink = dark ? "#ffffff" : "#111111";
      if (labelled) {
        text(x + 6, ny + 16, 11, truncate_to_width(n.name, 17), fmt::format(" fill=\"{}\"", ink));
        std::string figure = n.cell == MapCell::Down      ? "down"
                             : n.cell == MapCell::Unknown ? "usage ?"
                                                          : fmt::format("{}%{}", pct(n.fraction),
                                                                        n.cell == MapCell::Cordoned ? " · " + state_text(n) : "");
        text(x + 6, ny + 32, 11, figure, fmt::format(" fill=\"{}\"", ink));
      } else if (n.cell == MapCell::Down) {
        body += fmt::format("<path d=\"M{} {}l{} {}M{} {}l{} {}\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n", x + 3, ny + 3,
                            cw - 6, ch - 6, x + cw - 3, ny + 3, -(cw - 6), ch - 6);
      }
      body += "</g>\n";
    }
    int rows = static_cast<int>((r.nodes.size() + static_cast<size_t>(cols) - 1) / static_cast<size_t>(cols));
    y += rows * (ch + gap) - gap;
    body += "</g>\n";
  }

  // The legend: the scale, then the marks.
  y += 30;
  body += "<g class=\"legend\">\n";
  text(margin, y, 13, "Legend", " font-weight=\"bold\"");
  y += 8;
  const int sw = 14;
  std::vector<std::pair<std::string, std::string>> entries;  // Fill/stroke markup, label.
  for (int l = 0; l < 10; ++l)
    entries.push_back({fmt::format("fill=\"{}\" stroke=\"#999\"", k_svg_fill[l]), svg_level_range(l)});
  entries.push_back({"fill=\"#fed976\" stroke=\"#222\" stroke-width=\"2\" stroke-dasharray=\"4 2\"", "cordoned, draining"});
  entries.push_back({fmt::format("fill=\"{}\" stroke=\"#999\"", k_svg_down), "down"});
  if (m.measure == MapMeasure::Usage) entries.push_back({"fill=\"#ffffff\" stroke=\"#999\"", "no usage reported"});
  // Entries flow left to right, each as wide as its label (at about 7 pixels a
  // character of 11-pixel text), onto as many lines as they need.
  int x = margin, ly = y;
  for (const auto& [paint_attrs, label] : entries) {
    int item_w = sw + 6 + static_cast<int>(display_width(label)) * 7 + 18;
    if (x > margin && x + item_w > width - margin) {
      x = margin;
      ly += 22;
    }
    body += fmt::format("<rect class=\"swatch\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}/>\n", x, ly, sw, sw,
                        paint_attrs);
    text(x + sw + 6, ly + 11, 11, label);
    x += item_w;
  }
  y = ly + 22;
  body += "</g>\n";

  // Pending work and hot spots.
  y += 16;
  body += "<g class=\"pending\">\n";
  if (m.pending == 0) {
    text(margin, y, 13, "Pending: none", " font-weight=\"bold\"");
  } else {
    text(margin, y, 13,
         fmt::format("Pending: {} asking for {}", plural(m.pending, "instance", "instances"), request_text(m.pending_request)),
         " font-weight=\"bold\"");
    for (const auto& p : m.largest_pending) {
      y += 17;
      std::string line = fmt::format("{}: {} ({})", p.key, request_text(p.request), p.priority);
      if (!p.reason.empty()) line += " \u2014 " + p.reason;
      text(margin + 12, y, 12, truncate_to_width(line, static_cast<size_t>((width - 2 * margin) / 6.5)));
    }
  }
  body += "</g>\n";
  y += 26;
  body += "<g class=\"hot\">\n";
  std::string threshold = fmt::format("{}% or more", pct(m.hot_threshold));
  if (m.hot.empty()) {
    text(margin, y, 13, fmt::format("Hot spots ({}): none", threshold), " font-weight=\"bold\"");
  } else {
    text(margin, y, 13, fmt::format("Hot spots ({}): {}", threshold, plural(m.hot.size(), "node", "nodes")),
         " font-weight=\"bold\"");
    constexpr size_t k_shown = 20;
    for (size_t k = 0; k < m.hot.size() && k < k_shown; ++k) {
      const MapNode& n = m.nodes[m.hot[k]];
      y += 17;
      text(margin + 12, y, 12,
           fmt::format("{}{}: cpu {}%, memory {}%, {}", n.name, n.rack.empty() ? "" : " (rack " + n.rack + ")", pct(n.cpu),
                       pct(n.memory), plural(n.instances.size(), "instance", "instances")));
    }
    if (m.hot.size() > k_shown) {
      y += 17;
      text(margin + 12, y, 12, fmt::format("... and {} more", m.hot.size() - k_shown));
    }
  }
  body += "</g>\n";
  y += margin;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      width, y);
  out += fmt::format("<title>{}</title>\n", xml_escape(fmt::format("{}: {} at {}", title, measure_name(m.measure),
                                                                     display_time(m.time_ms))));
  out += fmt::format("<rect class=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, y);
  out += body;
  out += "</svg>\n";
  return out;
}

nlohmann::json map_json(const ClusterMap& m) {
  using nlohmann::json;
  auto resources = [](const Resources& r) {
    return json{{"cpu_millis", r.cpu_millis}, {"memory_bytes", r.memory_bytes}, {"gpu", r.gpu}};
  };
  json j;
  j["cluster"] = m.title;
  j["time"] = format_rfc3339(Clock::time_point(std::chrono::milliseconds(m.time_ms)));
  j["by"] = std::string(measure_name(m.measure));
  j["level"] = m.measure == MapMeasure::Usage ? "max(cpu, memory) used / capacity" : "max(cpu, memory) requested / capacity";
  j["hot_threshold"] = m.hot_threshold;
  j["capacity"] = resources(m.capacity);
  j["allocated"] = resources(m.allocated);
  j["used"] = resources(m.used);
  j["instances"] = m.instances;
  j["usage_unreported"] = m.usage_unreported;
  j["racks"] = json::array();
  for (const auto& r : m.racks) {
    json nodes = json::array();
    for (size_t k : r.nodes) nodes.push_back(m.nodes[k].name);
    j["racks"].push_back({{"name", r.name}, {"nodes", nodes}, {"capacity", resources(r.capacity)},
                          {"allocated", resources(r.allocated)}, {"used", resources(r.used)}, {"hot", r.hot},
                          {"empty", r.empty}});
  }
  j["nodes"] = json::array();
  for (const auto& n : m.nodes) {
    json x{{"name", n.name},
           {"rack", n.rack},
           {"state", std::string(node_state_name(n.state))},
           {"draining", n.draining},
           {"capacity", resources(n.capacity)},
           {"allocated", resources(n.allocated)},
           {"usage", n.usage ? resources(*n.usage) : json(nullptr)},
           {"usage_reported", n.usage_reported},
           {"cpu", n.cpu},
           {"memory", n.memory},
           {"fraction", n.fraction},
           {"level", n.cell == MapCell::Down || n.cell == MapCell::Unknown ? json(nullptr) : json(n.level)},
           {"instances", n.instances}};
    j["nodes"].push_back(std::move(x));
  }
  json pending{{"count", m.pending}, {"request", resources(m.pending_request)}, {"largest", json::array()}};
  for (const auto& p : m.largest_pending)
    pending["largest"].push_back(
        {{"instance", p.key}, {"request", resources(p.request)}, {"priority", p.priority}, {"reason", p.reason}});
  j["pending"] = std::move(pending);
  j["hot_spots"] = json::array();
  for (size_t k : m.hot) {
    const MapNode& n = m.nodes[k];
    j["hot_spots"].push_back({{"name", n.name}, {"rack", n.rack}, {"cpu", n.cpu}, {"memory", n.memory}, {"fraction", n.fraction}});
  }
  return j;
}

}  // namespace gaia::cli
