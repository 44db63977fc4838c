#pragma once
// How many threads a piece of work that splits well runs on: the machine's cores, up to
// a cap, since the work it splits (decoding, the controllers of a pass) gains little
// past a few threads and each thread costs memory (a malloc arena of its own).

#include <algorithm>
#include <thread>

namespace gaia {

inline unsigned worker_threads(unsigned cap = 4) {
  return std::clamp(std::thread::hardware_concurrency(), 1u, std::max(cap, 1u));
}

}  // namespace gaia
