#pragma once
// Plots for reports (`gaia sim replay --plot`, `gaia sim compact --plot`): gaia writes a
// gnuplot script with the data inline and runs Debian's gnuplot on it, so a report can
// go into a document as SVG or PNG without a plotting library linked into gaia.

#include <string>
#include <vector>

#include "lib/error.hpp"

namespace gaia::cli {

// The gnuplot terminal line for `path` by its extension (".svg" or ".png"), or an error
// naming the extensions understood.
Result<std::string> plot_terminal(const std::string& path, int width, int height);

// `text` as a gnuplot single-quoted string, its quotes doubled, so a title or path can
// never end the string and run as commands.
std::string plot_quote(const std::string& text);

// Whether a picture can be drawn to `path`: gnuplot is on PATH and the file's directory
// takes a new file. Checked before a long run, so its report is not lost to a plot
// that cannot be drawn.
Result<void> check_plot_target(const std::string& path);

// A named block of inline data ("$alloc << EOD ... EOD"), rows of space-separated
// numbers; gnuplot reads it as it reads a data file.
std::string plot_data_block(const std::string& name, const std::vector<std::vector<double>>& rows);

// Runs gnuplot on `script` (its first line sets the terminal; the rest plots), writing
// `path`: into a uniquely named temporary file next to it, renamed over `path` only
// when gnuplot succeeded, so a failed plot leaves an older picture as it was. Errors say what gnuplot printed, or
// how to install it when it is not on PATH.
Result<void> run_gnuplot(const std::string& script, const std::string& path);

}  // namespace gaia::cli
