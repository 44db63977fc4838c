#include "cli/interrupt.hpp"

#include <algorithm>
#include <csignal>
#include <thread>

namespace gaia::cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int) { g_stop = 1; }

}  // namespace

void catch_stop_signals(bool with_sigpipe) {
  g_stop = 0;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // No SA_RESTART: a sleep returns at once on a signal.
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (with_sigpipe) sigaction(SIGPIPE, &sa, nullptr);
}

bool stop_requested() { return g_stop != 0; }

void nap(std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  // Slices, not one sleep: a signal that arrives between the check and the sleep must
  // not cost the whole interval.
  while (!stop_requested() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min(d, std::chrono::milliseconds(50)));
}

}  // namespace gaia::cli
