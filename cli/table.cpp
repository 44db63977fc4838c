#include "cli/table.hpp"

#include <algorithm>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

namespace gaia::cli {

namespace {

constexpr size_t kGap = 3;
constexpr size_t kMinColumn = 6;  // Narrowing stops here: "ab…" says little.
// A wrapped column narrower than this reads badly: columns are left out before it gets
// there, and it goes below only when nothing is left to leave out, down to kMinWrap.
constexpr size_t kWrapComfort = 30;
constexpr size_t kMinWrap = 10;

// Length of the SGR sequence starting at `i` ("\033[...m"), or 0.
size_t sgr_length(std::string_view s, size_t i) {
  if (s[i] != '\033' || i + 1 >= s.size() || s[i + 1] != '[') return 0;
  size_t j = i + 2;
  while (j < s.size() && ((s[j] >= '0' && s[j] <= '9') || s[j] == ';')) ++j;
  return j < s.size() && s[j] == 'm' ? j + 1 - i : 0;
}

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

size_t display_width(std::string_view s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size();) {
    if (size_t n = sgr_length(s, i)) {
      i += n;
      continue;
    }
    if (!continuation(s[i])) ++width;
    ++i;
  }
  return width;
}

std::string truncate_to_width(std::string_view s, size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width == 0) return "";
  std::string out;
  size_t used = 0;
  bool coloured = false;
  for (size_t i = 0; i < s.size();) {
    if (size_t n = sgr_length(s, i)) {
      out.append(s.substr(i, n));
      coloured = true;
      i += n;
      continue;
    }
    if (!continuation(s[i])) {
      if (used + 1 == width) break;  // Keep the last column for the ellipsis.
      ++used;
    }
    out += s[i];
    ++i;
  }
  // The loop stops only at the start of a character, so no multi-byte sequence is cut.
  out += "…";
  if (coloured) out += "\033[0m";
  return out;
}

TableOptions table_options_for(std::FILE* stream) {
  TableOptions o;
  int fd = fileno(stream);
  if (fd < 0 || !isatty(fd)) return o;
  o.truncate = true;
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    o.max_width = ws.ws_col;
  } else if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    long v = std::strtol(c, &end, 10);
    if (end && *end == '\0' && v > 0) o.max_width = static_cast<size_t>(v);
  }
  return o;
}

TableOptions indented_table_options(std::FILE* stream, size_t indent) {
  TableOptions o = table_options_for(stream);
  if (o.max_width > 0) o.max_width = o.max_width > indent ? o.max_width - indent : 1;
  return o;
}

std::vector<std::string> wrap_to_width(std::string_view s, size_t width) {
  if (width == 0 || display_width(s) <= width) return {std::string(s)};
  // Pieces end after a space or a comma, which stays with the piece before the break.
  std::vector<std::string_view> pieces;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ' || s[i] == ',') {
      pieces.push_back(s.substr(start, i + 1 - start));
      start = i + 1;
    }
  }
  if (start < s.size()) pieces.push_back(s.substr(start));
  auto rtrim = [](std::string t) {
    while (!t.empty() && t.back() == ' ') t.pop_back();
    return t;
  };
  std::vector<std::string> lines;
  std::string line;
  size_t used = 0;
  auto flush = [&] {
    if (std::string t = rtrim(line); !t.empty()) lines.push_back(std::move(t));
    line.clear();
    used = 0;
  };
  for (std::string_view piece : pieces) {
    const size_t w = display_width(piece);
    std::string_view bare = piece;
    while (!bare.empty() && bare.back() == ' ') bare.remove_suffix(1);
    const size_t bare_w = display_width(bare);
    if (used + bare_w <= width) {
      line.append(piece);
      used += w;
      continue;
    }
    flush();
    if (bare_w <= width) {
      line.assign(piece);
      used = w;
      continue;
    }
    // A word wider than the column: cut it into column-wide parts, whole characters.
    for (size_t i = 0; i < bare.size();) {
      if (size_t n = sgr_length(bare, i)) {
        line.append(bare.substr(i, n));
        i += n;
        continue;
      }
      if (!continuation(bare[i])) {
        if (used == width) flush();
        ++used;
      }
      line += bare[i];
      ++i;
    }
  }
  flush();
  return lines;
}

Table::Table(std::vector<std::string> headers) : m_headers(std::move(headers)), m_fits(m_headers.size()) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(m_headers.size());
  m_rows.push_back(std::move(cells));
}

void Table::set_fit(std::string_view header, ColumnFit fit) {
  for (size_t c = 0; c < m_headers.size(); ++c)
    if (m_headers[c] == header) m_fits[c] = fit;
}

TableLayout Table::layout(const TableOptions& options, const TableLayout* previous) const {
  const size_t n = m_headers.size();
  TableLayout out;
  out.shown = previous && previous->shown.size() == n ? previous->shown : std::vector<bool>(n, true);
  out.width.assign(n, 0);
  std::vector<size_t> natural(n, 0);
  for (size_t c = 0; c < n; ++c) {
    natural[c] = display_width(m_headers[c]);
    for (const auto& row : m_rows) natural[c] = std::max(natural[c], display_width(row[c]));
    if (previous && previous->width.size() == n) natural[c] = std::max(natural[c], previous->width[c]);
  }
  out.width = natural;
  if (!options.truncate || options.max_width == 0 || n == 0) return out;
  const size_t limit = options.max_width;

  size_t last = n;  // The last column shown: it is never padded, so it alone may narrow in a later part.
  auto find_last = [&] {
    last = n;
    for (size_t c = 0; c < n; ++c)
      if (out.shown[c]) last = c;
  };
  find_last();
  // How narrow a column may get: `comfortable` for choosing what to leave out, else the
  // last resort. A later part of a followed table narrows only its last column.
  auto floor_of = [&](size_t c, bool comfortable) {
    const size_t header = display_width(m_headers[c]);
    if (previous && c != last) return natural[c];
    switch (m_fits[c].fit) {
      case Fit::Keep: return natural[c];
      case Fit::Cut: return comfortable ? natural[c] : std::min(natural[c], std::max(kMinColumn, header));
      case Fit::Wrap: return std::min(natural[c], std::max(comfortable ? kWrapComfort : kMinWrap, header));
    }
    return natural[c];
  };
  auto total = [&](auto width_of) {
    size_t sum = 0, shown = 0;
    for (size_t c = 0; c < n; ++c) {
      if (!out.shown[c]) continue;
      sum += width_of(c);
      ++shown;
    }
    return sum + (shown > 0 ? kGap * (shown - 1) : 0);
  };
  // Leave out columns, least useful first, until the rest fits without cutting anything
  // or wrapping anything narrower than is comfortable. Only the first part decides.
  if (!previous) {
    while (total([&](size_t c) { return floor_of(c, true); }) > limit) {
      size_t drop = n;
      for (size_t c = 0; c < n; ++c)
        if (out.shown[c] && m_fits[c].priority > 0 && (drop == n || m_fits[c].priority >= m_fits[drop].priority))
          drop = c;
      if (drop == n) break;
      out.shown[drop] = false;
    }
    find_last();
  }
  // Then narrow, the widest column first: wrapped columns to a comfortable width, then
  // to their minimum (wrapping loses nothing), and only then cut columns. What still
  // does not fit overflows: names are never cut.
  size_t now = total([&](size_t c) { return out.width[c]; });
  auto narrow = [&](Fit fit, bool comfortable) {
    while (now > limit) {
      size_t widest = n;
      for (size_t c = 0; c < n; ++c)
        if (out.shown[c] && m_fits[c].fit == fit && out.width[c] > floor_of(c, comfortable) &&
            (widest == n || out.width[c] > out.width[widest]))
          widest = c;
      if (widest == n) return;
      --out.width[widest];
      --now;
    }
  };
  narrow(Fit::Wrap, true);
  narrow(Fit::Wrap, false);
  narrow(Fit::Cut, false);
  return out;
}

std::string Table::render(const TableOptions& options) const { return render(options, layout(options), true); }

std::string Table::render(const TableOptions& options, const TableLayout& layout, bool header) const {
  const size_t n = m_headers.size();
  std::vector<size_t> columns;
  for (size_t c = 0; c < n; ++c)
    if (c < layout.shown.size() && layout.shown[c]) columns.push_back(c);
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    // Each shown cell as the lines it takes: one, unless it wraps.
    std::vector<std::vector<std::string>> parts;
    size_t height = 1;
    for (size_t c : columns) {
      const size_t w = layout.width[c];
      if (!options.truncate) parts.push_back({cells[c]});
      else if (m_fits[c].fit == Fit::Wrap) parts.push_back(wrap_to_width(cells[c], w));
      else if (m_fits[c].fit == Fit::Keep) parts.push_back({cells[c]});
      else parts.push_back({truncate_to_width(cells[c], w)});
      height = std::max(height, parts.back().size());
    }
    for (size_t k = 0; k < height; ++k) {
      std::string text;
      for (size_t i = 0; i < columns.size(); ++i) {
        const std::string& cell = k < parts[i].size() ? parts[i][k] : std::string();
        text += cell;
        if (i + 1 < columns.size())
          text.append(layout.width[columns[i]] - std::min(layout.width[columns[i]], display_width(cell)) + kGap, ' ');
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out += text;
      out += '\n';
    }
  };
  if (header) line(m_headers);
  for (const auto& row : m_rows) line(row);
  return out;
}

}  // namespace gaia::cli
