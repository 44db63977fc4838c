// The driver of a fuzz target in the normal (g++) build, where libFuzzer is not
// available: it replays every corpus input, then feeds the target inputs made by seeded,
// uninformed mutations of the corpus (bit flips, inserted dictionary tokens, extreme
// numbers, splices). It is what `scripts/test.sh` runs as the short fuzz pass; the long,
// coverage-guided runs use the same targets built with clang (-DGAIA_FUZZ=ON,
// scripts/fuzz.sh). A crash, a broken invariant (abort), an uncaught exception or an
// input that runs longer than --timeout leaves the input in --artifact-dir and fails.
//
//   fuzz_semver [--runs N] [--seed S] [--max-seconds T] [--timeout T] [--max-len L]
//               [--dict FILE] [--artifact-dir DIR] CORPUS_DIR_OR_FILE...

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// What the signal handler needs, prepared before any input runs: it may only call
// async-signal-safe functions, so the artifact path is fixed and the input is a plain
// buffer it writes with write(2).
std::vector<uint8_t> g_current;
char g_artifact[4096] = "crash-input";
char g_corpus_file[4096] = "";  // Set while a corpus input runs: it reproduces from its own file.
volatile sig_atomic_t g_in_run = 0;  // Whether a failure belongs to an input (or to the driver).

void write_artifact_and_die(const char* why) {
  if (!g_in_run) {
    const char* parts[] = {"fuzz: ", why, " in the driver, outside any input\n"};
    for (const char* p : parts) (void)!::write(2, p, std::strlen(p));
    return;
  }
  if (g_corpus_file[0] != '\0') {
    const char* parts[] = {"fuzz: ", why, " on the corpus input ", g_corpus_file, "\n"};
    for (const char* p : parts) (void)!::write(2, p, std::strlen(p));
    return;
  }
  int fd = ::open(g_artifact, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t off = 0;
    while (off < g_current.size()) {
      ssize_t n = ::write(fd, g_current.data() + off, g_current.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  const char* parts[] = {"fuzz: ", why, "; the input is in ", g_artifact, " (run the target with that file to reproduce)\n"};
  for (const char* p : parts) (void)!::write(2, p, std::strlen(p));
}

// Fixed names: strsignal() is not async-signal-safe.
const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "a segmentation fault (SIGSEGV; a stack overflow too)";
    case SIGABRT: return "an abort (SIGABRT: a broken invariant or a failed assertion)";
    case SIGFPE: return "an arithmetic fault (SIGFPE)";
    case SIGBUS: return "a bus error (SIGBUS)";
    case SIGILL: return "an illegal instruction (SIGILL)";
    case SIGALRM: return "an input ran past --timeout";
    default: return "a fatal signal";
  }
}

void on_signal(int sig) {
  write_artifact_and_die(signal_name(sig));
  ::signal(sig == SIGALRM ? SIGABRT : sig, SIG_DFL);
  ::raise(sig == SIGALRM ? SIGABRT : sig);
}

// The handlers run on a stack of their own, so a stack overflow (unbounded recursion
// is a typical parser bug) still leaves its input behind.
void install_handlers() {
  static std::vector<char> alt_stack(1 << 16);
  stack_t ss{};
  ss.ss_sp = alt_stack.data();
  ss.ss_size = alt_stack.size();
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL, SIGALRM}) ::sigaction(sig, &sa, nullptr);
}

void on_terminate() {
  const char* why = "an uncaught exception";
  std::string what;
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = std::string("an uncaught exception: ") + ex.what();
      why = what.c_str();
    } catch (...) {
    }
  }
  write_artifact_and_die(why);
  ::signal(SIGABRT, SIG_DFL);
  std::abort();
}

struct Options {
  uint64_t runs = 0;
  uint64_t seed = 1;
  double max_seconds = 0;  // 0: no limit.
  unsigned timeout = 10;
  size_t max_len = 4096;
  std::string dict;
  std::string artifact_dir = ".";
  std::vector<std::string> paths;
};

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// libFuzzer's dictionary format: one "token" per line (C escapes \\, \" and \xNN), an
// optional name= before it, # comments.
std::vector<std::string> read_dict(const std::string& path) {
  std::vector<std::string> tokens;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t open = line.find('"');
    size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        char c = line[++i];
        auto hex = [](char h) { return std::isxdigit(static_cast<unsigned char>(h)) != 0; };
        if (c == 'x' && i + 2 < close && hex(line[i + 1]) && hex(line[i + 2])) {
          token += static_cast<char>(std::strtol(line.substr(i + 1, 2).c_str(), nullptr, 16));
          i += 2;
        } else if (c == 'n') {
          token += '\n';
        } else if (c == 't') {
          token += '\t';
        } else {
          token += c;
        }
      } else {
        token += line[i];
      }
    }
    tokens.push_back(token);
  }
  return tokens;
}

// Texts that break number handling: limits of every integer width, exponents, signs.
const std::vector<std::string> kInteresting = {
    "0", "-0", "-1", "1", "255", "256", "65535", "65536", "2147483647", "2147483648", "-2147483649",
    "4294967296", "9007199254740991", "9007199254740992", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "18446744073709551615", "18446744073709551616", "1e308", "1e309", "1e-400",
    "0.000000001", "NaN", "inf", "-inf", "0x10", "1_000", "99999999999999999999999999999999"};

class Mutator {
 public:
  Mutator(uint64_t seed, std::vector<std::string> dict, size_t max_len)
      : m_rng(seed), m_dict(std::move(dict)), m_max_len(max_len) {}

  std::vector<uint8_t> mutate(const std::vector<std::vector<uint8_t>>& corpus) {
    std::vector<uint8_t> data = corpus.empty() ? std::vector<uint8_t>{} : corpus[pick(corpus.size())];
    const size_t steps = 1 + pick(4);
    for (size_t s = 0; s < steps; ++s) step(data, corpus);
    if (data.size() > m_max_len) data.resize(m_max_len);
    return data;
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(m_rng); }

  void insert(std::vector<uint8_t>& data, std::string_view text) {
    size_t at = pick(data.size() + 1);
    data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), text.begin(), text.end());
  }

  void step(std::vector<uint8_t>& data, const std::vector<std::vector<uint8_t>>& corpus) {
    switch (pick(9)) {
      case 0:  // Flip a bit.
        if (!data.empty()) data[pick(data.size())] ^= static_cast<uint8_t>(1u << pick(8));
        break;
      case 1:  // Any byte anywhere.
        if (!data.empty()) data[pick(data.size())] = static_cast<uint8_t>(pick(256));
        break;
      case 2:  // Insert a byte, often a structural one.
        insert(data, std::string(1, "\n :-[]{},\"'#&*!|>%@`\t\\\0"[pick(23)]));
        break;
      case 3:  // Delete a range.
        if (!data.empty()) {
          size_t at = pick(data.size());
          size_t len = 1 + pick(std::min<size_t>(data.size() - at, 16));
          data.erase(data.begin() + static_cast<std::ptrdiff_t>(at), data.begin() + static_cast<std::ptrdiff_t>(at + len));
        }
        break;
      case 4:  // Duplicate a range (deep nesting, repeated keys).
        if (!data.empty()) {
          size_t at = pick(data.size());
          size_t len = 1 + pick(std::min<size_t>(data.size() - at, 64));
          std::string chunk(data.begin() + static_cast<std::ptrdiff_t>(at), data.begin() + static_cast<std::ptrdiff_t>(at + len));
          for (size_t k = 0, n = 1 + pick(8); k < n; ++k) insert(data, chunk);
        }
        break;
      case 5:  // A token of the target's dictionary.
        if (!m_dict.empty()) insert(data, m_dict[pick(m_dict.size())]);
        break;
      case 6: {  // Replace a run of digits with an extreme number.
        std::vector<size_t> starts;
        for (size_t i = 0; i < data.size(); ++i)
          if (std::isdigit(data[i]) && (i == 0 || !std::isdigit(data[i - 1]))) starts.push_back(i);
        const std::string& n = kInteresting[pick(kInteresting.size())];
        if (starts.empty()) {
          insert(data, n);
          break;
        }
        size_t at = starts[pick(starts.size())], end = at;
        while (end < data.size() && std::isdigit(data[end])) ++end;
        data.erase(data.begin() + static_cast<std::ptrdiff_t>(at), data.begin() + static_cast<std::ptrdiff_t>(end));
        data.insert(data.begin() + static_cast<std::ptrdiff_t>(at), n.begin(), n.end());
        break;
      }
      case 7:  // Splice in part of another corpus input.
        if (!corpus.empty()) {
          const auto& other = corpus[pick(corpus.size())];
          if (!other.empty()) {
            size_t at = pick(other.size());
            size_t len = 1 + pick(other.size() - at);
            insert(data, std::string(other.begin() + static_cast<std::ptrdiff_t>(at),
                                     other.begin() + static_cast<std::ptrdiff_t>(at + len)));
          }
        }
        break;
      default:  // Truncate.
        if (!data.empty()) data.resize(pick(data.size()));
        break;
    }
  }

  std::mt19937_64 m_rng;
  std::vector<std::string> m_dict;
  size_t m_max_len;
};

int usage(const char* argv0, const std::string& problem) {
  std::fprintf(stderr,
               "%s: %s\nusage: %s [--runs N] [--seed S] [--max-seconds T] [--timeout T] [--max-len L] [--dict FILE] "
               "[--artifact-dir DIR] CORPUS...\n",
               argv0, problem.c_str(), argv0);
  return 2;
}

void run_one(const std::vector<uint8_t>& input, unsigned timeout) {
  g_current = input;
  g_in_run = true;
  ::alarm(timeout);
  LLVMFuzzerTestOneInput(g_current.data(), g_current.size());
  ::alarm(0);
  g_in_run = false;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    try {
      if (a == "--runs") o.runs = std::stoull(value());
      else if (a == "--seed") o.seed = std::stoull(value());
      else if (a == "--max-seconds") o.max_seconds = std::stod(value());
      else if (a == "--timeout") o.timeout = static_cast<unsigned>(std::stoul(value()));
      else if (a == "--max-len") o.max_len = std::stoull(value());
      else if (a == "--dict") o.dict = value();
      else if (a == "--artifact-dir") o.artifact_dir = value();
      else if (a.starts_with("--")) return usage(argv[0], "unknown option " + a);
      else o.paths.push_back(a);
    } catch (const std::exception&) {
      return usage(argv[0], "a number is expected after " + a);
    }
  }
  if (o.paths.empty()) return usage(argv[0], "no corpus given");

  std::vector<fs::path> files;
  for (const std::string& p : o.paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      return usage(argv[0], "no such file or directory: " + p);
    }
  }
  std::sort(files.begin(), files.end());  // The same seed mutates the same inputs.

  fs::create_directories(o.artifact_dir);
  std::string artifact = (fs::path(o.artifact_dir) / (fs::path(argv[0]).filename().string() + "-crash")).string();
  std::snprintf(g_artifact, sizeof g_artifact, "%s", artifact.c_str());
  install_handlers();
  std::set_terminate(on_terminate);

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<uint8_t>> corpus;
  for (const fs::path& f : files) {
    corpus.push_back(read_file(f));
    std::snprintf(g_corpus_file, sizeof g_corpus_file, "%s", f.c_str());
    run_one(corpus.back(), o.timeout);
  }
  g_corpus_file[0] = '\0';

  Mutator mutator(o.seed, o.dict.empty() ? std::vector<std::string>{} : read_dict(o.dict), o.max_len);
  uint64_t done = 0;
  for (; done < o.runs; ++done) {
    if (o.max_seconds > 0 && done % 256 == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.max_seconds)
      break;
    run_one(mutator.mutate(corpus), o.timeout);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %zu corpus input(s) and %llu mutated input(s) (seed %llu) in %.2f s: no crash, hang or broken "
              "invariant\n",
              fs::path(argv[0]).filename().c_str(), files.size(), static_cast<unsigned long long>(done),
              static_cast<unsigned long long>(o.seed), seconds);
  return 0;
}
