#include "ops/cycle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "controllers/inventory.hpp"
#include "controllers/submit.hpp"

namespace gaia::ops {

namespace {

int64_t earliest(int64_t a, int64_t b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

// The controllers' decision on a state the observation was applied to, as one batch
// (observation first, so events read in the order things happened).
struct Decision {
  Batch batch;
  ReconcileOutcome outcome;
};

// What an observation changes in `st`: the nodes a backend that owns them reports (it
// says which exist first, so the copies are observed on the nodes as they are now), then
// the copies. `wake_at_ms` gets the inventory's next timer.
Batch observed_batch(const ClusterState& st, const Observation& obs, int64_t now_ms, const CycleOptions& options,
                     int64_t& wake_at_ms) {
  Batch batch;
  if (obs.inventory) {
    ControllerResult nodes = sync_inventory(st, *obs.inventory, ControllerContext{now_ms, options.controller});
    wake_at_ms = earliest(wake_at_ms, nodes.wake_at_ms);
    batch = std::move(nodes.batch);
  }
  if (batch.empty()) {
    merge_batch(batch, observe_instances(st, obs, now_ms));
    return batch;
  }
  ClusterState synced = apply_batch(st, batch);
  synced.seq += static_cast<int64_t>(batch.events.size());
  merge_batch(batch, observe_instances(synced, obs, now_ms));
  return batch;
}

Decision decide(const ClusterState& st, const Observation& obs, int64_t now_ms, const CycleOptions& options) {
  Decision d;
  int64_t inventory_wake = 0;
  d.batch = observed_batch(st, obs, now_ms, options, inventory_wake);
  ControllerContext ctx{now_ms, options.controller};
  if (d.batch.empty()) {
    // Nothing observed changed: the controllers decide on the state itself, which is
    // copied only if one of them changes something.
    d.outcome = reconcile_batch(st, ctx);
  } else {
    d.outcome = reconcile(apply_batch(st, d.batch), ctx);  // apply_batch counts the events in seq.
  }
  d.outcome.wake_at_ms = earliest(d.outcome.wake_at_ms, inventory_wake);
  merge_batch(d.batch, d.outcome.batch);
  return d;
}

void note_active(CycleResult& r, const std::vector<std::string>& active) {
  for (const auto& a : active)
    if (std::find(r.active.begin(), r.active.end(), a) == r.active.end()) r.active.push_back(a);
}

// Sends the actuation to the backend, stops first so that room is made before starts.
// Returns the warning events for what failed.
Batch actuate(Backend& backend, const ClusterState& st, const Actuation& act, int64_t now_ms, CycleResult& r) {
  Batch warnings;
  auto report = [&](const std::vector<ActionResult>& results, const char* what) {
    for (const auto& a : results) {
      if (!a.error) continue;
      r.errors.push_back(*a.error);
      auto& e = warnings.event("BackendError", fmt::format("{} on {}: {}", what, a.node, a.error->to_string()), "Warning");
      e.instance = a.instance;
      e.node = a.node;
      if (const Instance* i = st.find_instance(a.instance)) {
        e.tenant = i->tenant;
        e.app = i->app;
        e.role = i->role;
      }
    }
  };
  auto whole = [&](const BackendError& err, const char* what) {
    r.errors.push_back(err);
    warnings.event("BackendError", fmt::format("{}: {}", what, err.to_string()), "Warning");
  };
  // Starts wait only where room was to be made and was not: a stop the backend refused
  // for now (a disruption budget) must not hold up every start in the cluster.
  bool all_stops_failed = false;
  std::set<std::string> blocked_nodes;
  if (!act.stops.empty()) {
    auto stopped = backend.stop(act.stops, now_ms);
    if (!stopped) {
      whole(stopped.error(), "stopping copies");
      all_stops_failed = true;
    } else {
      report(*stopped, "stop");
      for (const auto& a : *stopped)
        if (a.error) blocked_nodes.insert(a.node);
      r.stopped += static_cast<int>(act.stops.size());
    }
  }
  std::vector<StartSpec> starts;
  if (!all_stops_failed)
    for (const auto& s : act.starts)
      if (!blocked_nodes.count(s.instance.node)) starts.push_back(s);
  if (!starts.empty()) {
    auto started = backend.start(starts, now_ms);
    if (!started) whole(started.error(), "starting copies");
    else {
      report(*started, "start");
      r.started += static_cast<int>(starts.size());
    }
  }
  return warnings;
}

// The state a cycle works on, shared with the State's kept copy (State::load_shared):
// the cycle's result copies it once, at the end, not once per round.
using SharedState = std::shared_ptr<const ClusterState>;

// Commits `b` (events about the backend, nothing decided on the state) under `op` and
// adds it to the cycle's result; `current` becomes the state after it. An empty batch
// writes nothing.
Result<void> commit_events(State& state, const std::string& op, Batch b, CycleResult& r, SharedState& current) {
  if (b.empty()) return {};
  current.reset();  // Not held while the commit is applied to the kept state.
  auto committed = state.update_shared(op, [&](const ClusterState&, Batch& out) -> Result<void> {
    out = b;
    return {};
  });
  if (!committed) return std::unexpected(committed.error());
  current = std::move(*committed);
  merge_batch(r.batch, std::move(b));
  return {};
}

// Once nothing is left to do, what deleted apps and dropped roles left on the backend
// beside their copies goes (Backend::remove_unused), and the timeline says what went.
// Only here, on a converged cycle of the store: the copies are stopped by then, and a
// what-if plan (settle) never removes anything.
Result<void> remove_leftovers(State& state, Backend& backend, const std::string& op, CycleResult& r,
                              SharedState& current) {
  auto removed = backend.remove_unused(*current, [&]() -> std::optional<ClusterState> {
    auto now = state.load();
    if (!now) return std::nullopt;
    return std::move(*now);
  });
  Batch b;
  if (!removed) {
    r.errors.push_back(removed.error());
    b.event("BackendError",
            fmt::format("removing what deleted apps left on the {} backend: {}", backend.name(),
                        removed.error().to_string()),
            "Warning");
  } else if (!removed->empty()) {
    b.event("BackendCleanup", fmt::format("removed what deleted apps and roles left on the {} backend: {}",
                                          backend.name(), fmt::join(*removed, ", ")));
  }
  return commit_events(state, op, std::move(b), r, current);
}

}  // namespace

Result<CycleResult> run_cycle(State& state, Backend& backend, const Clock& clock, const std::string& op,
                              const CycleOptions& options) {
  CycleResult r;
  SharedState current;
  // Every way out of the loop hands back the state it reached.
  auto done = [&]() -> Result<CycleResult> {
    r.state = current ? std::move(current) : std::make_shared<const ClusterState>();
    return std::move(r);
  };
  for (int round = 0; round < options.max_rounds; ++round) {
    ++r.rounds;
    int64_t now = to_millis(clock.now());
    // The observation is taken after the state is loaded (inside decide, again on every
    // retry), so it is never older than the state it is applied to: a copy another
    // process started and recorded Running since is in it, and not mistaken for lost.
    std::optional<BackendResult<Observation>> obs;
    Batch observed;
    int64_t inventory_wake = 0;
    current.reset();  // The last round's state is not held while this one loads.
    // What was observed is committed on its own first, so the kept state takes it in
    // place and the controllers decide on that state itself: deciding on a copy with the
    // observation applied copied every instance of the cluster once a round (a tenth of
    // a command at 50,000 instances). Both commits come before anything is actuated,
    // so the intent is still durable first, and a crash between them leaves news that
    // the next cycle decides on (every step is level-triggered).
    int64_t loaded_revision = 0;
    auto seen = state.update_shared(op, [&](const ClusterState& s, Batch& b) -> Result<void> {
      loaded_revision = s.revision;
      obs = backend.observe(now);
      if (!*obs) return {};
      inventory_wake = 0;
      observed = observed_batch(s, **obs, now, options, inventory_wake);
      b = observed;
      return {};
    });
    if (!seen) return std::unexpected(seen.error());
    if (!*obs) {
      // Nothing is known about what runs: decide nothing, so an unreachable backend
      // never looks like a cluster where everything was lost.
      Batch warn;
      warn.event("BackendError", fmt::format("observing the {} backend: {}", backend.name(), obs->error().to_string()),
                 "Warning");
      r.errors.push_back(obs->error());
      current = std::move(*seen);
      if (auto warned = commit_events(state, op, std::move(warn), r, current); !warned)
        return std::unexpected(warned.error());
      return done();
    }
    // The store's revision once the observation was applied: that of its commit, or of
    // the state it was taken on when it changed nothing. Any write since (another
    // process's commit, a copy it started, even a heartbeat) moves it; an unknown one
    // (0: a journaled commit) never matches. The commit must also follow the load
    // directly (every store moves one revision per transaction): a write between them
    // that the commit's compare does not cover (a copy another runner started after the
    // observation) would otherwise pass for part of what was observed.
    const int64_t committed = state.last_commit_revision();
    const int64_t seen_revision =
        observed.empty() ? (*seen)->revision : (committed == loaded_revision + 1 ? committed : 0);
    seen->reset();  // Not held while the controllers' load takes the commit in place.
    ReconcileOutcome outcome;
    Batch again;  // Observed anew, when the state moved on since the observation.
    auto st = state.update_shared(op, [&](const ClusterState& s, Batch& b) -> Result<void> {
      again = Batch{};
      if (s.revision == seen_revision) {
        outcome = reconcile_batch(s, ControllerContext{now, options.controller});
        b = outcome.batch;
        return {};
      }
      // The store changed since the observation (another process moved an instance,
      // or started a copy): observe again and decide on both in one commit, so the
      // starts and stops below never weigh a newer state against an older observation.
      obs = backend.observe(now);
      if (!*obs) return {};
      Decision d = decide(s, **obs, now, options);
      outcome = std::move(d.outcome);
      again = std::move(d.batch);
      b = again;
      return {};
    });
    if (!st) return std::unexpected(st.error());
    current = std::move(*st);
    if (!*obs) {
      Batch warn;
      warn.event("BackendError", fmt::format("observing the {} backend: {}", backend.name(), obs->error().to_string()),
                 "Warning");
      r.errors.push_back(obs->error());
      merge_batch(r.batch, std::move(observed));
      if (auto warned = commit_events(state, op, std::move(warn), r, current); !warned)
        return std::unexpected(warned.error());
      return done();
    }
    r.wake_at_ms = earliest(earliest(outcome.wake_at_ms, inventory_wake), (*obs)->wake_at_ms);
    note_active(r, outcome.active);
    // What the controllers decided, apart from what was observed: they decided on this
    // round's news already, so a round that decides nothing and has nothing to send is
    // the last one, even when it recorded news (another would observe the same and
    // decide the same nothing; a change that time brings is the wake-up's).
    bool decided = !outcome.batch.empty();
    merge_batch(r.batch, std::move(observed));
    merge_batch(r.batch, again.empty() ? std::move(outcome.batch) : std::move(again));
    Actuation act = plan_actuation(*current, **obs);
    r.held = act.held;
    if (!act.empty()) {
      size_t errors_before = r.errors.size();
      Batch warnings = actuate(backend, *current, act, now, r);
      if (auto w = commit_events(state, op, std::move(warnings), r, current); !w) return std::unexpected(w.error());
      // A backend that refused or could not be reached is retried by the next cycle,
      // not hammered by this one.
      if (r.errors.size() != errors_before) return done();
    }
    if (!decided && act.empty()) {
      r.converged = true;
      if (auto cleaned = remove_leftovers(state, backend, op, r, current); !cleaned)
        return std::unexpected(cleaned.error());
      return done();
    }
    if (!backend.synchronous() && !act.empty()) return done();  // News come later: Backend::wait.
  }
  return done();
}

CycleResult settle(ClusterState state, Backend& backend, int64_t now_ms, const CycleOptions& options) {
  CycleResult r;
  for (int round = 0; round < options.max_rounds; ++round) {
    ++r.rounds;
    auto obs = backend.observe(now_ms);
    if (!obs) {
      r.errors.push_back(obs.error());
      break;
    }
    Decision d = decide(state, *obs, now_ms, options);
    state = apply_batch(std::move(state), d.batch);
    state.seq += static_cast<int64_t>(d.batch.events.size());
    r.wake_at_ms = earliest(d.outcome.wake_at_ms, obs->wake_at_ms);
    note_active(r, d.outcome.active);
    bool changed = !d.batch.empty();
    merge_batch(r.batch, std::move(d.batch));
    Actuation act = plan_actuation(state, *obs);
    r.held = act.held;
    if (!act.empty()) {
      size_t errors_before = r.errors.size();
      Batch warnings = actuate(backend, state, act, now_ms, r);
      state.seq += static_cast<int64_t>(warnings.events.size());
      merge_batch(r.batch, std::move(warnings));
      if (r.errors.size() != errors_before) break;
    }
    if (!changed && act.empty()) {
      r.converged = true;
      break;
    }
    if (!backend.synchronous() && !act.empty()) break;
  }
  r.state = std::make_shared<const ClusterState>(std::move(state));
  return r;
}

}  // namespace gaia::ops
