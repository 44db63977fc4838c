#include "controllers/reclamation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "controllers/runtime_util.hpp"

namespace gaia {

namespace {

constexpr int64_t k_mib = 1024 * 1024;

// usage * (1 + margin) rounded up to a multiple of `unit`, kept within [usage,
// request] (a dimension not requested stays 0). Memory is rounded to whole MiB so
// reservations read as quantities ("2458Mi") rather than odd byte counts.
int64_t decayed(int64_t usage, int64_t request, double margin, int64_t unit) {
  if (request <= 0) return request;
  auto t = static_cast<int64_t>(std::ceil(static_cast<double>(usage) * (1.0 + margin)));
  t = (t + unit - 1) / unit * unit;
  return std::max(std::min(t, request), usage);
}

bool exceeds(const Resources& usage, const Resources& reservation) {
  return usage.cpu_millis > reservation.cpu_millis || usage.memory_bytes > reservation.memory_bytes;
}

Resources at_least(Resources r, const Resources& usage) {
  r.cpu_millis = std::max(r.cpu_millis, usage.cpu_millis);
  r.memory_bytes = std::max(r.memory_bytes, usage.memory_bytes);
  return r;
}

std::optional<Resources> unless_request(const Resources& r, const Resources& request) {
  if (r == request) return std::nullopt;
  return r;
}

bool moved(const Resources& from, const Resources& to, const Resources& request) {
  auto dim = [](int64_t a, int64_t b, int64_t q) {
    return std::llabs(b - a) > static_cast<int64_t>(k_reclaim_threshold * static_cast<double>(std::max<int64_t>(q, 1)));
  };
  return dim(from.cpu_millis, to.cpu_millis, request.cpu_millis) ||
         dim(from.memory_bytes, to.memory_bytes, request.memory_bytes);
}

std::string duration_text(int64_t ms) {
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

}  // namespace

ReservationTarget reservation_target(const Instance& i, int64_t now_ms, const ControllerOptions& options) {
  ReservationTarget t;
  if (!running_on_node(i) || !i.usage) return t;
  const Resources& q = i.request;
  const Resources& u = *i.usage;
  t.spike = exceeds(u, i.reserved());
  Resources full = at_least(q, u);
  if (i.priority.band != Band::Prod) {
    t.reservation = unless_request(full, q);
    return t;
  }
  int64_t hold = i.started_ms + options.reclaim_startup_ms;
  if (i.snapped_back_ms) hold = std::max(hold, i.snapped_back_ms + options.reclaim_startup_ms);
  if (t.spike) hold = std::max(hold, now_ms + options.reclaim_startup_ms);
  if (now_ms < hold) {
    t.holding = true;
    t.hold_until_ms = hold;
    t.reservation = unless_request(full, q);
    return t;
  }
  Resources d = q;
  d.cpu_millis = decayed(u.cpu_millis, q.cpu_millis, options.reclaim_margin, 1);
  d.memory_bytes = decayed(u.memory_bytes, q.memory_bytes, options.reclaim_margin, k_mib);
  t.reservation = unless_request(d, q);
  return t;
}

ControllerResult reclaim_reservations(const ClusterState& state, const ControllerContext& ctx) {
  ControllerResult out;
  auto wake = [&](int64_t at) {
    if (at > ctx.now_ms && (out.wake_at_ms == 0 || at < out.wake_at_ms)) out.wake_at_ms = at;
  };
  for (const auto& i : state.snapshot.instances) {
    if (!running_on_node(i)) {
      // A stopped instance holds nothing; its next start begins with the full request.
      if (i.reservation || i.snapped_back_ms) {
        Instance x = i;
        x.reservation.reset();
        x.snapped_back_ms = 0;
        out.batch.put_instances.push_back(std::move(x));
      }
      continue;
    }
    auto t = reservation_target(i, ctx.now_ms, ctx.options);
    if (t.holding && i.usage) wake(t.hold_until_ms);
    const Resources& q = i.request;
    Resources cur = i.reserved();
    Resources next = t.reservation.value_or(q);
    bool prod = i.priority.band == Band::Prod;
    bool was_reclaimed = cur.cpu_millis < q.cpu_millis || cur.memory_bytes < q.memory_bytes;
    int64_t snapped = t.spike && prod && was_reclaimed ? ctx.now_ms : i.snapped_back_ms;
    bool write = t.spike || moved(cur, next, q) || (!i.usage && i.reservation);
    if (!write || (t.reservation == i.reservation && snapped == i.snapped_back_ms)) continue;
    Instance x = i;
    x.reservation = t.reservation;
    x.snapped_back_ms = snapped;
    out.batch.put_instances.push_back(x);

    bool raised = next.cpu_millis > cur.cpu_millis || next.memory_bytes > cur.memory_bytes;
    bool over = next.cpu_millis > q.cpu_millis || next.memory_bytes > q.memory_bytes;
    std::string usage = i.usage ? cpu_memory_text(*i.usage) : "not observed";
    TimelineEvent* e = nullptr;
    if (raised && over) {
      e = &out.batch.event("OverRequest",
                           fmt::format("uses {}, more than the {} requested: reserving what it uses", usage,
                                       cpu_memory_text(q)),
                           "Warning");
    } else if (raised) {
      std::string why = t.spike ? fmt::format("usage {} exceeded the reservation {}", usage, cpu_memory_text(cur))
                        : !i.usage ? std::string("usage is no longer observed")
                                   : fmt::format("in its start-up period until {} after start", duration_text(ctx.options.reclaim_startup_ms));
      e = &out.batch.event("SnappedBack", next == q ? fmt::format("{}: reservation back to the request {}", why, cpu_memory_text(q))
                                                    : fmt::format("{}: reservation {} of {} requested", why,
                                                                  cpu_memory_text(next), cpu_memory_text(q)));
    } else if (next == q) {
      e = &out.batch.event("SnappedBack", fmt::format("usage {} is back within the request: reservation back to the "
                                                      "request {}",
                                                      usage, cpu_memory_text(q)));
    } else {
      Resources lent{std::max<int64_t>(q.cpu_millis - next.cpu_millis, 0),
                     std::max<int64_t>(q.memory_bytes - next.memory_bytes, 0), 0, 0};
      e = &out.batch.event(
          "Reclaimed", fmt::format("reservation {} of {} requested (usage {}, margin {:.0f}%): {} lent to nonprod work",
                                   cpu_memory_text(next), cpu_memory_text(q), usage, ctx.options.reclaim_margin * 100,
                                   cpu_memory_text(lent)));
    }
    e->tenant = i.tenant;
    e->app = i.app;
    e->role = i.role;
    e->instance = i.key();
    e->node = i.node;
  }
  return out;
}

}  // namespace gaia
