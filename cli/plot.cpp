#include "cli/plot.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace gaia::cli {

namespace bp = boost::process;

namespace {

// A unique empty file next to `target` ("x.svg" -> "x.svg.a1B2c3"), so two runs writing
// the same picture do not share temporary files, and a user's own file is never reused.
Result<std::filesystem::path> unique_beside(const std::filesystem::path& target) {
  std::string pattern = target.string() + ".XXXXXX";
  int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    return fail(Diagnostic{{}, "--plot", fmt::format("cannot write next to {}: {}", target.string(), std::strerror(errno)),
                           "check that its directory exists and is writable"});
  ::close(fd);
  return std::filesystem::path(pattern);
}

}  // namespace

Result<std::string> plot_terminal(const std::string& path, int width, int height) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == ".svg") return fmt::format("set terminal svg size {},{} dynamic font 'sans,11' background '#ffffff'", width, height);
  if (ext == ".png") return fmt::format("set terminal png size {},{} font 'sans,10'", width, height);
  return fail(Diagnostic{{}, "--plot", fmt::format("cannot tell the picture's format from {}", path),
                         "name the file with .svg or .png"});
}

std::string plot_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';  // Inside gnuplot's single quotes, '' is one quote.
    if (c == '\n') continue;
    out += c;
  }
  return out + "'";
}

std::string plot_data_block(const std::string& name, const std::vector<std::vector<double>>& rows) {
  std::string out = fmt::format("${} << EOD\n", name);
  for (const auto& r : rows) out += fmt::format("{:g}\n", fmt::join(r, " "));
  out += "EOD\n";
  return out;
}

Result<void> check_plot_target(const std::string& path) {
  if (bp::search_path("gnuplot").empty())
    return fail(Diagnostic{{}, "--plot", "gnuplot is not installed, so no picture can be drawn",
                           "install it (as root: apt-get install gnuplot-nox), or take the numbers with -o json"});
  auto probe = unique_beside(path);
  if (!probe) return fail(probe.error());
  std::error_code ec;
  std::filesystem::remove(*probe, ec);
  return {};
}

Result<void> run_gnuplot(const std::string& script, const std::string& path) {
  auto gnuplot = bp::search_path("gnuplot");
  if (gnuplot.empty()) return check_plot_target(path);
  std::filesystem::path target(path);
  auto tmp = unique_beside(target);
  if (!tmp) return fail(tmp.error());
  auto script_file = unique_beside(target);
  if (!script_file) {
    std::error_code ec;
    std::filesystem::remove(*tmp, ec);
    return fail(script_file.error());
  }
  std::error_code ignored;
  auto cleanup = [&] {
    std::filesystem::remove(*tmp, ignored);
    std::filesystem::remove(*script_file, ignored);
  };
  {
    // From a file rather than a pipe: gnuplot may answer on stderr before it has read
    // a long script, and a full pipe each way would hang both. The output path is
    // quoted, so no name runs as gnuplot commands.
    std::ofstream f(*script_file);
    f << script.substr(0, script.find('\n') + 1) << "set output " << plot_quote(tmp->string()) << "\n"
      << script.substr(script.find('\n') + 1);
    if (!f.flush()) {
      cleanup();
      return fail(Diagnostic{{}, "--plot", fmt::format("cannot write {}", script_file->string()),
                             "check that the picture's directory exists and is writable"});
    }
  }
  std::string text;
  int rc = -1;
  try {
    bp::ipstream err;
    bp::child c(gnuplot, script_file->string(), bp::std_in < bp::null, bp::std_out > bp::null, bp::std_err > err);
    text.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
    c.wait();
    rc = c.exit_code();
  } catch (const bp::process_error& e) {
    text = e.code().message();
  }
  if (rc != 0) {
    cleanup();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    return fail(Diagnostic{{}, "--plot", fmt::format("gnuplot failed (exit code {}): {}", rc, text), ""});
  }
  // mkstemp made the file private; the picture gets the mode a new file would have.
  mode_t mask = ::umask(0);
  ::umask(mask);
  std::error_code ec;
  std::filesystem::permissions(*tmp, static_cast<std::filesystem::perms>(0666 & ~mask), ec);
  std::filesystem::rename(*tmp, target, ec);
  std::filesystem::remove(*script_file, ignored);
  if (ec) {
    cleanup();
    return fail(Diagnostic{{}, "--plot", fmt::format("cannot write {}: {}", path, ec.message()),
                           "check that its directory exists and is writable"});
  }
  return {};
}

}  // namespace gaia::cli
