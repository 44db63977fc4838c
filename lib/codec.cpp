#include "lib/codec.hpp"

namespace gaia {

void to_json(nlohmann::json& j, const Priority& p) { j = p.to_string(); }

void from_json(const nlohmann::json& j, Priority& p) {
  auto parsed = parse_priority(j.get<std::string>());
  // Records in the store were validated when written; a bad one is corruption.
  if (!parsed) throw nlohmann::json::other_error::create(501, "bad priority in record: " + parsed.error(), &j);
  p = *parsed;
}

void to_json(nlohmann::json& j, const Instance& i) {
  j = nlohmann::json{{"tenant", i.tenant},   {"app", i.app},
                     {"role", i.role},       {"ordinal", i.ordinal},
                     {"node", i.node},       {"state", i.state},
                     {"request", i.request}, {"priority", i.priority},
                     {"labels", i.labels},   {"address", i.address},
                     {"ports", i.ports},     {"volumes", i.volumes},
                     {"pending_reason", i.pending_reason},
                     {"restarts", i.restarts},
                     {"migrations", i.migrations}};
  // Run-time fields are written only when set, so records stay small and old ones load.
  if (i.reservation) j["reservation"] = *i.reservation;
  if (i.limit) j["limit"] = *i.limit;
  if (i.started_ms) j["started_ms"] = i.started_ms;
  if (i.restart_at_ms) j["restart_at_ms"] = i.restart_at_ms;
  if (!i.failure.empty()) j["failure"] = i.failure;
  if (!i.hash.empty()) j["hash"] = i.hash;
  if (i.usage) j["usage"] = *i.usage;
  if (i.throttled) j["throttled"] = true;
  if (i.internal_failure) j["internal_failure"] = true;
  if (i.snapped_back_ms) j["snapped_back_ms"] = i.snapped_back_ms;
  if (i.generation) j["generation"] = i.generation;
  if (i.exit_code) j["exit_code"] = i.exit_code;
}

void from_json(const nlohmann::json& j, Instance& i) {
  Instance d;
  i.tenant = j.value("tenant", d.tenant);
  i.app = j.value("app", d.app);
  i.role = j.value("role", d.role);
  i.ordinal = j.value("ordinal", d.ordinal);
  i.node = j.value("node", d.node);
  i.state = j.value("state", d.state);
  i.request = j.value("request", d.request);
  i.priority = j.value("priority", d.priority);
  i.labels = j.value("labels", d.labels);
  i.address = j.value("address", d.address);
  i.ports = j.value("ports", d.ports);
  i.volumes = j.value("volumes", d.volumes);
  i.pending_reason = j.value("pending_reason", d.pending_reason);
  i.restarts = j.value("restarts", d.restarts);
  i.migrations = j.value("migrations", d.migrations);
  if (j.contains("reservation")) i.reservation = j["reservation"].get<Resources>();
  else i.reservation.reset();
  if (j.contains("limit")) i.limit = j["limit"].get<Resources>();
  else i.limit.reset();
  i.started_ms = j.value("started_ms", d.started_ms);
  i.restart_at_ms = j.value("restart_at_ms", d.restart_at_ms);
  i.failure = j.value("failure", d.failure);
  i.hash = j.value("hash", d.hash);
  if (j.contains("usage")) i.usage = j["usage"].get<Resources>();
  else i.usage.reset();
  i.throttled = j.value("throttled", d.throttled);
  i.internal_failure = j.value("internal_failure", d.internal_failure);
  i.snapped_back_ms = j.value("snapped_back_ms", d.snapped_back_ms);
  i.generation = j.value("generation", d.generation);
  i.exit_code = j.value("exit_code", d.exit_code);
}

}  // namespace gaia
