// gaia store check|backup|restore: the store itself, as opposed to the cluster in it
// (docs/store.md, "Damaged records" and "Backup and restore"). These open the store
// without a session: a session reads records (the backend setting, the retention) that
// may be the very ones that are damaged.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/agent_control.hpp"
#include "cli/context.hpp"
#include "store/record_check.hpp"
#include "store/sqlite_store.hpp"

namespace gaia::cli {

namespace {

struct CheckArgs {
  bool quarantine = false;
  std::string output = "text";
};

struct RestoreArgs {
  std::string file;
  bool force = false;
};

// The context's store, opened as every command opens it (read-only when this user may
// not write it); `create` only for a restore.
Result<std::unique_ptr<Store>> open_context_store(const Globals& g, ContextEntry& context, bool create) {
  auto resolved = resolve_context(g);
  if (!resolved) return fail(resolved.error());
  context = std::move(*resolved);
  return open_store(context, OpenStoreOptions{.create = create, .quick = false, .origin = store_origin(g)});
}

Diagnostic not_sqlite(const ContextEntry& context, const std::string& what, const std::string& hint) {
  return Diagnostic{{}, "", fmt::format("{} works on SQLite stores; {} is an etcd store", what, context.store), hint};
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

int run_check(const Globals& g, const CheckArgs& a) {
  ContextEntry context;
  auto store = open_context_store(g, context, false);
  if (!store) return report(g, store.error());
  auto* sqlite = dynamic_cast<SqliteStore*>(store->get());
  // The file as a whole first: a damaged page is beyond what moving records can mend.
  std::string integrity = "ok";
  if (sqlite)
    if (auto ok = sqlite->integrity_check(); !ok) integrity = ok.error().message;
  auto scan = find_bad_records(**store);
  if (!scan) return report(g, scan.error());
  struct Outcome {
    BadRecord bad;
    std::string moved_to;  // Empty: not moved.
  };
  std::vector<Outcome> outcomes;
  size_t left = 0;
  for (const auto& bad : scan->bad) {
    Outcome o{bad, ""};
    if (a.quarantine) {
      auto moved = quarantine_record(**store, bad);
      if (!moved) return report(g, moved.error());
      if (*moved) o.moved_to = **moved;
    }
    if (o.moved_to.empty()) ++left;
    outcomes.push_back(std::move(o));
  }
  if (a.output == "json") {
    nlohmann::json bad = nlohmann::json::array();
    for (const auto& o : outcomes) {
      nlohmann::json j = {{"key", o.bad.key}, {"reason", o.bad.reason}, {"mod_revision", o.bad.mod_revision}};
      if (!o.moved_to.empty()) j["quarantined_to"] = o.moved_to;
      bad.push_back(std::move(j));
    }
    nlohmann::json out = {{"store", context.store},     {"revision", scan->revision}, {"records", scan->records},
                          {"integrity", integrity},     {"bad", bad}};
    if (sqlite) out["reserve_held"] = sqlite->reserve_held();
    // A reason may quote the bad bytes themselves, which need not be UTF-8.
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (!g.quiet) {
    std::printf("store %s: %lld record(s) at revision %lld\n", context.store.c_str(),
                static_cast<long long>(scan->records), static_cast<long long>(scan->revision));
    if (integrity != "ok") std::printf("%s %s\n", red(g, stdout, "damaged file:").c_str(), integrity.c_str());
    for (const auto& o : outcomes) {
      if (!o.moved_to.empty())
        std::printf("%s %s -> %s (%s)\n", yellow(g, stdout, "quarantined").c_str(), o.bad.key.c_str(),
                    o.moved_to.c_str(), o.bad.reason.c_str());
      else if (a.quarantine)
        std::printf("%s %s: it changed since it was checked; run the check again\n", red(g, stdout, "left").c_str(),
                    o.bad.key.c_str());
      else
        std::printf("%s %s: %s\n", red(g, stdout, "bad record").c_str(), o.bad.key.c_str(), o.bad.reason.c_str());
    }
    if (scan->bad.empty()) std::printf("every record decodes\n");
    else if (!a.quarantine)
      std::printf("%zu bad record(s); `gaia store check --quarantine` moves them under %s, where nothing reads "
                  "them, so every command works again\n",
                  scan->bad.size(), k_quarantine_prefix);
    if (sqlite && !sqlite->read_only() && sqlite->reserve_held())
      std::printf("reserve for a full disk: %s held in %s\n", mib(k_store_reserve_bytes).c_str(),
                  sqlite->reserve_path().c_str());
    else if (sqlite && !sqlite->read_only())
      std::printf("reserve for a full disk: not held (%s in %s): the disk was full or short of room; it is made "
                  "again once twice as much is free\n",
                  mib(k_store_reserve_bytes).c_str(), sqlite->reserve_path().c_str());
  }
  if (integrity != "ok")
    return report_error(g, fmt::format("store {} failed SQLite's integrity check", context.store),
                        "restore it from a backup: `gaia store restore FILE`");
  return left == 0 ? k_ok : k_error;
}

int run_backup(const Globals& g, const std::string& file) {
  ContextEntry context;
  auto store = open_context_store(g, context, false);
  if (!store) return report(g, store.error());
  auto* sqlite = dynamic_cast<SqliteStore*>(store->get());
  if (!sqlite)
    return report(g, Diagnostics{not_sqlite(context, "gaia store backup",
                                            "etcd makes its own consistent snapshots: `etcdctl snapshot save FILE`")});
  if (auto done = sqlite->backup_to(file); !done) return report(g, Diagnostics{done.error().to_diagnostic()});
  if (g.quiet) return k_ok;
  // What the copy holds, read back from the copy itself.
  SqliteStoreOptions check;
  check.create = false;
  check.read_only = true;
  auto copy = SqliteStore::open(file, check);
  if (!copy) return report(g, Diagnostics{copy.error().to_diagnostic()});
  auto keys = (*copy)->read(RangeRequest{.key = "", .range_end = std::string(1, '\0'), .count_only = true});
  if (!keys) return report(g, Diagnostics{keys.error().to_diagnostic()});
  std::error_code ec;
  std::printf("backed up %s to %s: %lld record(s) at revision %lld, %s\n", context.store.c_str(), file.c_str(),
              static_cast<long long>(keys->count), static_cast<long long>(keys->revision),
              mib(std::filesystem::file_size(file, ec)).c_str());
  return k_ok;
}

// Who uses the store now: keys held by a live lease (a `gaia controller run` leading
// it) and the process backend's agent. Empty when nobody does.
Result<std::vector<std::string>> users_of(Store& store, const ContextEntry& context) {
  std::vector<std::string> users;
  RangeRequest request = RangeRequest::prefix("", 0, store.read_page_size());
  request.keys_only = true;
  for (;;) {
    auto got = store.read(request);
    if (!got) return fail(got.error().to_diagnostic());
    for (const auto& kv : got->kvs) {
      if (kv.lease == 0) continue;
      auto held = store.get(kv.key);  // The holder's own words (a leader names itself).
      if (!held) return fail(held.error().to_diagnostic());
      users.push_back(fmt::format("{} is held by a running process{}", kv.key, *held ? ": " + (*held)->value : ""));
    }
    if (!got->more || got->kvs.empty()) break;
    request.key = got->kvs.back().key + std::string(1, '\0');
    request.revision = got->revision;
  }
  auto agent = agent_status(run_dir_of(context.store));
  if (!agent) return fail(agent.error());
  if (agent->running) users.push_back(fmt::format("the agent (pid {}) serves its nodes", agent->pid));
  return users;
}

std::string utc_stamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &tm);
  return text;
}

int run_restore(const Globals& g, const RestoreArgs& a) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(a.file, ec))
    return report_error(g, fmt::format("no backup at {}", a.file), "name a file written by `gaia store backup FILE`");
  auto resolved = resolve_context(g);
  if (!resolved) return report(g, resolved.error());
  if (is_etcd_url(resolved->store))
    return report(g, Diagnostics{not_sqlite(*resolved, "gaia store restore",
                                            "restore etcd from its own snapshot: `etcdutl snapshot restore FILE`")});
  if (fs::exists(resolved->store, ec) && fs::equivalent(a.file, resolved->store, ec))
    return report_error(g, fmt::format("{} is the store itself", a.file), "name a backup file");
  // The backup is checked before anything is opened, let alone made, at the target.
  {
    SqliteStoreOptions check;
    check.create = false;
    check.read_only = true;
    auto source = SqliteStore::open(a.file, check);
    if (!source) return report(g, Diagnostics{source.error().to_diagnostic()});
    if (auto whole = (*source)->integrity_check(); !whole) return report(g, Diagnostics{whole.error().to_diagnostic()});
  }
  const bool existed = fs::exists(resolved->store, ec);
  ContextEntry context;
  auto store = open_context_store(g, context, true);
  if (!store) return report(g, store.error());
  auto* sqlite = dynamic_cast<SqliteStore*>(store->get());
  if (!sqlite) return report_error(g, fmt::format("{} is not a SQLite store", context.store), "");
  if (existed && !a.force) {
    auto users = users_of(**store, context);
    if (!users) return report(g, users.error());
    if (!users->empty())
      return report_error(g, fmt::format("store {} is in use: {}", context.store, fmt::join(*users, "; ")),
                          "stop them first (`gaia agent stop`, Ctrl-C on `gaia controller run`), or add --force: "
                          "they then read the restored content afresh");
  }
  // The content being replaced is kept, whole, beside the store.
  std::string aside = existed ? fmt::format("{}.before-restore-{}", context.store, utc_stamp()) : "";
  auto restored = sqlite->restore_from(a.file, aside);
  if (!restored) return report(g, Diagnostics{restored.error().to_diagnostic()});
  if (g.quiet) return k_ok;
  std::printf("restored %s from %s: %lld record(s) of revision %lld; the store is at revision %lld\n",
              context.store.c_str(), a.file.c_str(), static_cast<long long>(restored->keys),
              static_cast<long long>(restored->backup_revision), static_cast<long long>(restored->revision));
  if (!aside.empty()) std::printf("the previous content is kept in %s\n", aside.c_str());
  return k_ok;
}

}  // namespace

void register_store(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("store", "Check, back up and restore the store itself");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gaia store check                          # records that no longer decode, by key\n"
      "  gaia store check --quarantine             # set them aside so every command works again\n"
      "  gaia store backup /backups/gaia-$(date +%F).db\n"
      "  gaia store restore /backups/gaia-2026-11-24.db");

  auto check = std::make_shared<CheckArgs>();
  auto* c = cmd->add_subcommand("check", "Find records that do not decode (exit 1 when some are left)");
  c->footer(
      "Examples:\n"
      "  gaia store check\n"
      "  gaia store check --quarantine             # move them under quarantine/<key>@<revision>\n"
      "  gaia store check -o json\n"
      "A bad record makes every command that reads the cluster fail; quarantined, it is kept but never read.");
  c->add_flag("--quarantine", check->quarantine, "Move each bad record under quarantine/, where nothing reads it");
  c->add_option("-o,--output", check->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  c->callback([&g, code, check] { *code = run_check(g, *check); });

  auto file = std::make_shared<std::string>();
  auto* b = cmd->add_subcommand("backup", "Write a consistent copy of the store to FILE, while it is in use");
  b->footer(
      "Examples:\n"
      "  gaia store backup gaia-backup.db\n"
      "  gaia --store /srv/gaia.db store backup /backups/gaia-$(date +%F).db\n"
      "The copy is one moment of the store, whatever other commands write meanwhile; FILE must not exist.");
  b->add_option("FILE", *file, "The backup file to write (must not exist)")->required()->type_name("FILE");
  b->callback([&g, code, file] { *code = run_backup(g, *file); });

  auto restore = std::make_shared<RestoreArgs>();
  auto* r = cmd->add_subcommand("restore", "Replace the store's content with a backup (the old content is kept)");
  r->footer(
      "Examples:\n"
      "  gaia store restore gaia-backup.db\n"
      "  gaia store restore gaia-backup.db --force  # even while a controller or agent uses the store\n"
      "The previous content is kept beside the store as <store>.before-restore-<time>.");
  r->add_option("FILE", restore->file, "A file written by `gaia store backup`")->required()->type_name("FILE");
  r->add_flag("--force", restore->force, "Restore even while a controller runner or agent uses the store");
  r->callback([&g, code, restore] { *code = run_restore(g, *restore); });
}

}  // namespace gaia::cli
