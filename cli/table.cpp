#include "cli/table.hpp"

#include <algorithm>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

namespace gaia::cli {

namespace {

constexpr size_t kGap = 3;
constexpr size_t kMinColumn = 6;  // Narrowing stops here: "ab…" says little.

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

Table::Table(std::vector<std::string> headers) : m_headers(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(m_headers.size());
  m_rows.push_back(std::move(cells));
}

std::string Table::render(const TableOptions& options) const {
  const size_t n = m_headers.size();
  std::vector<size_t> width(n, 0);
  for (size_t c = 0; c < n; ++c) {
    width[c] = display_width(m_headers[c]);
    for (const auto& row : m_rows) width[c] = std::max(width[c], display_width(row[c]));
  }
  if (options.truncate && options.max_width > 0 && n > 0) {
    size_t total = kGap * (n - 1);
    for (size_t w : width) total += w;
    // Narrow the widest column one step at a time: long free-text columns (labels,
    // reasons) give way first, short ones (state, counts) stay whole. A column stops at
    // its floor (its header, at least kMinColumn); the next widest then gives way.
    std::vector<size_t> floor(n);
    for (size_t c = 0; c < n; ++c) floor[c] = std::min(width[c], std::max(kMinColumn, display_width(m_headers[c])));
    while (total > options.max_width) {
      size_t widest = n;
      for (size_t c = 0; c < n; ++c)
        if (width[c] > floor[c] && (widest == n || width[c] > width[widest])) widest = c;
      if (widest == n) break;  // Every column is at its floor: the line stays too long.
      --width[widest];
      --total;
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < n; ++c) {
      std::string cell = options.truncate ? truncate_to_width(cells[c], width[c]) : cells[c];
      text += cell;
      if (c + 1 < n) text.append(width[c] - std::min(width[c], display_width(cell)) + kGap, ' ');
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text;
    out += '\n';
  };
  line(m_headers);
  for (const auto& row : m_rows) line(row);
  return out;
}

}  // namespace gaia::cli
