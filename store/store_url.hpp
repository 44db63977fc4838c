#pragma once
// Where a store lives, as a user writes it in a context, `--store` or GAIA_STORE: the
// path of an SQLite file, or an etcd URL `etcd://HOST:PORT[,HOST:PORT...]` (`etcds://`
// for TLS). This turns such a string into what the store implementations open, so the
// CLI only carries strings and never parses URLs itself (docs/store.md, "Naming a store").

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lib/store.hpp"
#include "store/etcd_store.hpp"

namespace gaia {

// The client port etcd listens on unless told otherwise; an endpoint without a port gets it.
inline constexpr int k_etcd_default_port = 2379;

// The members of one etcd cluster, as an etcd URL names them.
struct EtcdUrl {
  bool tls = false;                    // etcds://
  std::vector<std::string> endpoints;  // "host:port" in the order given; IPv6 as "[::1]:2379".

  // "etcd://a:2379,b:2379": the form gaia stores in a context and prints.
  std::string canonical() const;
  // The same cluster whatever the order its endpoints are listed in and whether TLS is
  // asked for by etcds:// or by a CA file: the sorted endpoints. Keys what gaia keeps
  // locally per cluster (the process backend's run directory).
  std::string identity() const;
};

// Whether `text` is meant as an etcd URL (etcd:// or etcds://, any case).
bool is_etcd_url(std::string_view text);

// Parses an etcd URL. Refused, with a message that never repeats what came before an '@'
// (a password written into the URL by mistake): credentials in the URL, a path or a
// query, an empty or malformed endpoint, a port outside 1-65535, an endpoint listed twice.
StoreResult<EtcdUrl> parse_etcd_url(std::string_view text);

// A store named by a string: a file, or an etcd cluster.
struct StoreLocation {
  enum class Kind { File, Etcd };
  Kind kind = Kind::File;
  std::filesystem::path file;  // Kind::File
  EtcdUrl etcd;                // Kind::Etcd
};

// Any "scheme://" other than etcd:// and etcds:// is refused (an http:// client URL
// given by habit gets a hint naming the etcd:// form), so a URL never silently becomes
// a file of that name. Everything else is a file path.
StoreResult<StoreLocation> parse_store_location(std::string_view text);

// How to connect to an etcd store, kept beside its URL (a context's --etcd-* flags).
// Paths and names only, never a secret: the password is read from `password_file` each
// time the store is opened.
struct EtcdSettings {
  std::filesystem::path ca_file;    // CA bundle to verify the members (turns on TLS).
  std::filesystem::path cert_file;  // Client certificate and its key (PEM).
  std::filesystem::path key_file;
  std::string username;                 // etcd user (auth enabled on the cluster)...
  std::filesystem::path password_file;  // ...and the file holding its password.
  // Bounds each request to a member; 0 keeps EtcdOptions' default (5 s).
  std::chrono::milliseconds request_timeout{0};

  bool empty() const;
  bool operator==(const EtcdSettings&) const = default;
};

// Checks that the settings go together (a key needs a certificate and the reverse, a
// password file needs a username and the reverse), without reading any file.
StoreResult<void> check_etcd_settings(const EtcdSettings& settings);

// The options EtcdStore::open takes for `url` with `settings`: https:// endpoints for
// etcds:// (and for etcd:// when a CA or client certificate is set), the TLS files
// (which must exist), the username, and the password read now from its file (one
// trailing newline dropped). Errors name the files, never their contents.
StoreResult<EtcdOptions> etcd_options(const EtcdUrl& url, const EtcdSettings& settings);

}  // namespace gaia
