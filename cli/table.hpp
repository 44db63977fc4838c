#pragma once
// Aligned, kubectl-style tables for `gaia get` and friends: a header row in capitals,
// columns separated by three spaces, no trailing blanks. On a terminal the table is
// fitted to its width (ioctl TIOCGWINSZ, else $COLUMNS): the widest columns are
// narrowed and their long cells cut with '…'. Output to a pipe or file is never cut,
// so scripts always see whole values.

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::cli {

struct TableOptions {
  size_t max_width = 0;   // 0: no limit.
  bool truncate = false;  // Cut cells with '…' to fit max_width.
};

// The options for writing to `stream`: truncation and the terminal width on a tty
// (ioctl, else $COLUMNS), no limit otherwise.
TableOptions table_options_for(std::FILE* stream);
// The same for a table printed `indent` columns in from the left margin.
TableOptions indented_table_options(std::FILE* stream, size_t indent);

// Display width of `s`: code points, not bytes, and SGR colour sequences count zero.
size_t display_width(std::string_view s);
// `s` cut to at most `width` columns, ending with '…' when cut.
std::string truncate_to_width(std::string_view s, size_t width);

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return m_rows.size(); }
  bool empty() const { return m_rows.empty(); }

  // The table as text, one line per row plus the header, each ending in '\n'.
  std::string render(const TableOptions& options = {}) const;

 private:
  std::vector<std::string> m_headers;
  std::vector<std::vector<std::string>> m_rows;
};

}  // namespace gaia::cli
