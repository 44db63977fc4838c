#pragma once
// Aligned, kubectl-style tables for `gaia get` and friends: a header row in capitals,
// columns separated by three spaces, no trailing blanks. On a terminal the table is
// fitted to its width (ioctl TIOCGWINSZ, else $COLUMNS). Each column says how it may
// give way (ColumnFit): the least useful columns are left out first, as kubectl's
// default output leaves out what `-o wide` adds; free text wraps onto more lines; names
// are kept whole; other long cells are cut with '…' only when nothing else is left.
// Output to a pipe or file is never changed, so scripts always see whole values.

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

// How a column gives way when the table is wider than the terminal.
enum class Fit {
  Cut,   // Narrowed, long cells cut with '…', as a last resort (the default).
  Keep,  // Never narrowed: names and identifiers, which are useless in part.
  Wrap,  // Narrowed first, its cells continued on the next lines: messages, lists.
};

struct ColumnFit {
  // 0: always shown. Otherwise the column may be left out when the table does not fit,
  // the highest numbers first (equal numbers: the rightmost first).
  int priority = 0;
  Fit fit = Fit::Cut;
};

// The columns shown and their widths, as render() chose them.
struct TableLayout {
  std::vector<bool> shown;
  std::vector<size_t> width;
};

class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  // How the column with this header gives way; an unknown header is ignored, so one
  // list of fits can serve the default and the wide variants of a table.
  void set_fit(std::string_view header, ColumnFit fit);
  size_t rows() const { return m_rows.size(); }
  bool empty() const { return m_rows.empty(); }

  // The table as text, one line per row plus the header, each ending in '\n' (a
  // wrapped cell adds lines).
  std::string render(const TableOptions& options = {}) const;

  // For a table printed in parts as rows come (a follower): the layout of this part,
  // given the one of the part before (or none for the first). A later part keeps the
  // columns the first one showed, and its columns never narrow, so the rows stay
  // aligned with the header printed once.
  TableLayout layout(const TableOptions& options, const TableLayout* previous = nullptr) const;
  std::string render(const TableOptions& options, const TableLayout& layout, bool header) const;

 private:
  std::vector<std::string> m_headers;
  std::vector<ColumnFit> m_fits;
  std::vector<std::vector<std::string>> m_rows;
};

// `s` split into lines of at most `width` columns, breaking after spaces and commas where
// it can and inside a word only when the word alone is wider.
std::vector<std::string> wrap_to_width(std::string_view s, size_t width);

}  // namespace gaia::cli
