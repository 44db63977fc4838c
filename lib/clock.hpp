#pragma once
// Time as an interface, so code that depends on it (lease expiry, timeline timestamps,
// controller back-off) is tested with a clock the test moves by hand instead of sleeps.

#include <atomic>
#include <chrono>

namespace gaia {

class Clock {
 public:
  using time_point = std::chrono::system_clock::time_point;
  virtual ~Clock() = default;
  // Wall-clock time: values are stored (e.g. lease deadlines) and compared across
  // processes, so a per-process steady clock would not do.
  virtual time_point now() const = 0;
};

class SystemClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::system_clock::now(); }
};

// A clock that only moves when told to. Safe to read and advance from several threads.
class ManualClock final : public Clock {
 public:
  // 2024-01-01T00:00:00Z: a fixed, recognisable start so test output is reproducible.
  static constexpr std::chrono::seconds kDefaultStart{1704067200};

  explicit ManualClock(time_point start = time_point(kDefaultStart))
      : m_now(start.time_since_epoch().count()) {}

  time_point now() const override {
    return time_point(time_point::duration(m_now.load(std::memory_order_acquire)));
  }
  void set(time_point t) { m_now.store(t.time_since_epoch().count(), std::memory_order_release); }
  template <class Rep, class Period>
  void advance(std::chrono::duration<Rep, Period> d) {
    m_now.fetch_add(std::chrono::duration_cast<time_point::duration>(d).count(),
                    std::memory_order_acq_rel);
  }

 private:
  std::atomic<time_point::rep> m_now;
};

}  // namespace gaia
