#pragma once
// Reading a kubeconfig file (the format kubectl uses: clusters, users, contexts) into
// what gaia needs to reach one API server: its URL, whom to trust, and who gaia is.
//
// Supported: server; certificate-authority (a file, relative paths resolved from the
// kubeconfig's folder) and certificate-authority-data; insecure-skip-tls-verify (only
// when the kubeconfig itself says so); client-certificate(-data) with client-key(-data);
// token and tokenFile; the context's namespace. Credentials that need a program to run
// (exec plugins such as `aws eks get-token`, the legacy auth-provider) are refused with
// an error that names the user entry and says what to use instead: gaia never runs a
// command named by a configuration file. Username/password (basic auth, removed from
// Kubernetes in 1.19) is refused likewise.
//
// Secrets (token, key) live only in ClusterConfig; nothing here prints them, and the
// errors name the file and the entry, never a value.

#include <filesystem>
#include <string>
#include <string_view>

#include "lib/error.hpp"

namespace gaia::kube {

struct ClusterConfig {
  std::string server;  // "https://10.0.0.1:6443", without a trailing slash.
  // Whom to trust: PEM text (from -data or read from the file). Empty: the system's store.
  std::string ca_pem;
  bool insecure_skip_tls_verify = false;
  // Who gaia is: a client certificate and its key (PEM text), and/or a bearer token.
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  // The context's namespace ("" when it names none).
  std::string namespace_name;
  // For messages: the kubeconfig's path and the context's name.
  std::string source;
  std::string context;
};

// Parses kubeconfig text. `path` is where it came from (relative file references are
// resolved from its folder, errors are located in it); `context` picks the context, or
// the file's current-context when empty. Every problem found is reported, located at
// the file with the entry's path (`users[dev].user.exec`).
Result<ClusterConfig> parse_kubeconfig(std::string_view text, const std::filesystem::path& path,
                                       const std::string& context = {});
// Reads and parses the file at `path`.
Result<ClusterConfig> load_kubeconfig(const std::filesystem::path& path, const std::string& context = {});

}  // namespace gaia::kube
