#include "cli/plot.hpp"

#include <fmt/format.h>

#include <boost/process.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace gaia::cli {

namespace bp = boost::process;

Result<std::string> plot_terminal(const std::string& path, int width, int height) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".svg") return fmt::format("set terminal svg size {},{} dynamic font 'sans,11' background '#ffffff'", width, height);
  if (ext == ".png") return fmt::format("set terminal png size {},{} font 'sans,10'", width, height);
  return fail(Diagnostic{{}, "--plot", fmt::format("cannot tell the picture's format from {}", path),
                         "name the file with .svg or .png"});
}

std::string plot_data_block(const std::string& name, const std::vector<std::vector<double>>& rows) {
  std::string out = fmt::format("${} << EOD\n", name);
  for (const auto& r : rows) out += fmt::format("{:g}\n", fmt::join(r, " "));
  out += "EOD\n";
  return out;
}

Result<void> run_gnuplot(const std::string& script, const std::string& path) {
  auto gnuplot = bp::search_path("gnuplot");
  if (gnuplot.empty())
    return fail(Diagnostic{{}, "--plot", "gnuplot is not installed, so no picture can be drawn",
                           "install it (as root: apt-get install gnuplot-nox), or take the numbers with -o json"});
  std::filesystem::path target(path);
  std::filesystem::path tmp = target;
  tmp += ".tmp";
  std::filesystem::path script_file = target;
  script_file += ".gp.tmp";
  {
    // From a file rather than a pipe: gnuplot may answer on stderr before it has read
    // a long script, and a full pipe each way would hang both.
    std::ofstream f(script_file);
    f << fmt::format("set output '{}'\n{}", tmp.string(), script);
    if (!f.flush())
      return fail(Diagnostic{{}, "--plot", fmt::format("cannot write {}", script_file.string()),
                             "check that the picture's directory exists and is writable"});
  }
  std::string text;
  int rc = -1;
  try {
    bp::ipstream err;
    bp::child c(gnuplot, script_file.string(), bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > err);
    text.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
    c.wait();
    rc = c.exit_code();
  } catch (const bp::process_error& e) {
    text = e.code().message();
  }
  std::error_code ignored;
  std::filesystem::remove(script_file, ignored);
  if (rc != 0) {
    std::filesystem::remove(tmp, ignored);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return fail(Diagnostic{{}, "--plot", fmt::format("gnuplot failed (exit code {}): {}", rc, text), ""});
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return fail(Diagnostic{{}, "--plot", fmt::format("cannot write {}: {}", path, ec.message()),
                           "check that its directory exists and is writable"});
  }
  return {};
}

}  // namespace gaia::cli
