#include "kube/kubeconfig.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "net/base64.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::kube::ClusterConfig;
using gaia::kube::load_kubeconfig;
using gaia::kube::parse_kubeconfig;

namespace {

const std::string k_ca = "-----BEGIN CERTIFICATE-----\nMIIBcaTESTca\n-----END CERTIFICATE-----\n";
const std::string k_cert = "-----BEGIN CERTIFICATE-----\nMIIBcertTEST\n-----END CERTIFICATE-----\n";
const std::string k_key = "-----BEGIN PRIVATE KEY-----\nMIIEsecretKEYbytes\n-----END PRIVATE KEY-----\n";
const std::string k_token = "eyJhbGciOi.secret-token-value";

// base64 of `text` wrapped over several lines, as some tools write kubeconfigs.
std::string wrapped_base64(const std::string& text) {
  std::string flat = base64_encode(text);
  std::string out;
  for (size_t i = 0; i < flat.size(); i += 16) out += flat.substr(i, 16) + "\n      ";
  return out;
}

// Every message and hint of the diagnostics, for checks that nothing secret leaks.
std::string all_text(const Diagnostics& ds) { return format_diagnostics(ds); }

bool has_path(const Diagnostics& ds, const std::string& path) {
  for (const auto& d : ds)
    if (d.path == path) return true;
  return false;
}

const Diagnostic* find_path(const Diagnostics& ds, const std::string& path) {
  for (const auto& d : ds)
    if (d.path == path) return &d;
  return nullptr;
}

}  // namespace

TEST_CASE("kubeconfig: embedded data and a token in the current context", "[kube][kubeconfig]") {
  std::string text = fmt::format(R"(apiVersion: v1
kind: Config
clusters:
- name: other
  cluster:
    server: https://192.0.2.1:6443
- name: prod
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: {}
users:
- name: admin
  user:
    token: {}
    client-certificate-data: {}
    client-key-data: {}
contexts:
- name: prod-admin
  context:
    cluster: prod
    user: admin
    namespace: team-a
current-context: prod-admin
)",
                                 wrapped_base64(k_ca), k_token, base64_encode(k_cert), base64_encode(k_key));
  auto r = parse_kubeconfig(text, "/home/me/.kube/config");
  INFO((r ? "" : format_diagnostics(r.error())));
  REQUIRE(r);
  CHECK(r->server == "https://10.0.0.1:6443");  // Without the trailing slash.
  CHECK(r->ca_pem == k_ca);
  CHECK_FALSE(r->insecure_skip_tls_verify);
  CHECK(r->client_cert_pem == k_cert);
  CHECK(r->client_key_pem == k_key);
  CHECK(r->token == k_token);
  CHECK(r->namespace_name == "team-a");
  CHECK(r->context == "prod-admin");
  CHECK(r->source == "/home/me/.kube/config");
}

TEST_CASE("kubeconfig: files relative to its folder and tokenFile and an explicit context", "[kube][kubeconfig]") {
  test::TempDir dir("gaia-kubeconfig");
  dir.write("kube/pki/ca.crt", k_ca);
  dir.write("kube/pki/client.crt", k_cert);
  dir.write("kube/pki/client.key", k_key);
  dir.write("kube/token", k_token + "\n");
  auto absolute_ca = dir.write("elsewhere/ca.pem", k_ca);
  auto path = dir.write("kube/config", fmt::format(R"(clusters:
- name: local
  cluster:
    server: http://127.0.0.1:8080
    insecure-skip-tls-verify: true
- name: dev
  cluster:
    server: https://dev.example:6443
    certificate-authority: pki/ca.crt
- name: abs
  cluster:
    server: https://abs.example
    certificate-authority: {}
users:
- name: robot
  user:
    tokenFile: token
- name: person
  user:
    client-certificate: pki/client.crt
    client-key: pki/client.key
contexts:
- name: local
  context: {{cluster: local, user: robot}}
- name: dev
  context: {{cluster: dev, user: person, namespace: dev-ns}}
- name: abs
  context: {{cluster: abs}}
current-context: local
)",
                                                   absolute_ca.string()));

  SECTION("the current context") {
    auto r = load_kubeconfig(path);
    INFO((r ? "" : format_diagnostics(r.error())));
    REQUIRE(r);
    CHECK(r->context == "local");
    CHECK(r->server == "http://127.0.0.1:8080");
    CHECK(r->insecure_skip_tls_verify);
    CHECK(r->token == k_token);  // The file's trailing newline is not part of it.
    CHECK(r->ca_pem.empty());
    CHECK(r->namespace_name.empty());
  }
  SECTION("another context, by name: relative files are read from the kubeconfig's folder") {
    auto r = load_kubeconfig(path, "dev");
    INFO((r ? "" : format_diagnostics(r.error())));
    REQUIRE(r);
    CHECK(r->context == "dev");
    CHECK(r->server == "https://dev.example:6443");
    CHECK(r->ca_pem == k_ca);
    CHECK(r->client_cert_pem == k_cert);
    CHECK(r->client_key_pem == k_key);
    CHECK(r->token.empty());
    CHECK(r->namespace_name == "dev-ns");
  }
  SECTION("an absolute path, and a context without a user (anonymous)") {
    auto r = load_kubeconfig(path, "abs");
    INFO((r ? "" : format_diagnostics(r.error())));
    REQUIRE(r);
    CHECK(r->ca_pem == k_ca);
    CHECK(r->token.empty());
    CHECK(r->client_cert_pem.empty());
  }
  SECTION("a missing file is named") {
    auto r = load_kubeconfig(dir.path() / "nope");
    REQUIRE_FALSE(r);
    CHECK_THAT(all_text(r.error()), Catch::Contains("nope") && Catch::Contains("cannot read"));
  }
}

TEST_CASE("kubeconfig: credentials that run programs or basic auth are refused", "[kube][kubeconfig]") {
  std::string text = fmt::format(R"(clusters:
- name: eks
  cluster:
    server: https://eks.example
users:
- name: dev
  user:
    token: {}
    client-key-data: {}
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args: [eks, get-token, --cluster-name, x]
    auth-provider:
      name: gcp
      config: {{access-token: {}}}
    username: admin
    password: hunter2-password
contexts:
- name: eks
  context: {{cluster: eks, user: dev}}
current-context: eks
)",
                                 k_token, base64_encode(k_key), k_token);
  auto r = parse_kubeconfig(text, "/cfg/kubeconfig");
  REQUIRE_FALSE(r);
  const Diagnostics& ds = r.error();
  // Every problem at once, each located at the file with the entry's path.
  const Diagnostic* exec = find_path(ds, "users[dev].user.exec");
  const Diagnostic* provider = find_path(ds, "users[dev].user.auth-provider");
  const Diagnostic* basic = find_path(ds, "users[dev].user.username");
  REQUIRE(exec != nullptr);
  REQUIRE(provider != nullptr);
  REQUIRE(basic != nullptr);
  CHECK(exec->location.file == "/cfg/kubeconfig");
  CHECK(exec->location.line == 10);
  CHECK_THAT(exec->message, Catch::Contains("'aws'") && Catch::Contains("never runs a command"));
  CHECK_THAT(exec->hint, Catch::Contains("kubectl create token") && Catch::Contains("token:"));
  CHECK_THAT(provider->message, Catch::Contains("auth-provider 'gcp'"));
  CHECK_THAT(basic->message, Catch::Contains("basic authentication") && Catch::Contains("1.19"));
  // The key without its certificate is reported along with them.
  CHECK(has_path(ds, "users[dev].user"));
  std::string text_out = all_text(ds);
  CHECK_THAT(text_out, !Catch::Contains("secret-token-value"));
  CHECK_THAT(text_out, !Catch::Contains("hunter2"));
  CHECK_THAT(text_out, !Catch::Contains("secretKEY"));
  CHECK_THAT(text_out, !Catch::Contains(base64_encode(k_key).substr(0, 20)));
}

TEST_CASE("kubeconfig: unknown names list what exists and server problems are named", "[kube][kubeconfig]") {
  const std::string base = R"(clusters:
- name: c1
  cluster:
    server: https://c1.example
- name: noserver
  cluster:
    certificate-authority-data: "not base64!"
- name: ftp
  cluster:
    server: ftp://c.example
- name: proxied
  cluster:
    server: https://10.0.0.9
    proxy-url: socks5://proxy:1080
    tls-server-name: api.internal
users:
- name: u1
  user: {token: abc}
contexts:
- name: good
  context: {cluster: c1, user: u1}
- name: lost
  context: {cluster: nowhere, user: nobody}
- name: broken
  context: {cluster: noserver, user: u1}
- name: ftp
  context: {cluster: ftp, user: u1}
- name: proxied
  context: {cluster: proxied, user: u1}
)";

  SECTION("no context named, no current-context") {
    auto r = parse_kubeconfig(base, "k");
    REQUIRE_FALSE(r);
    CHECK_THAT(all_text(r.error()), Catch::Contains("good, lost, broken, ftp, proxied"));
  }
  SECTION("an unknown context lists the known ones") {
    auto r = parse_kubeconfig(base, "k", "staging");
    REQUIRE_FALSE(r);
    REQUIRE(r.error().size() == 1);
    CHECK_THAT(r.error()[0].message, Catch::Contains("'staging'") && Catch::Contains("good, lost, broken, ftp, proxied"));
  }
  SECTION("an unknown current-context is located at it") {
    auto r = parse_kubeconfig(base + "current-context: gone\n", "k");
    REQUIRE_FALSE(r);
    CHECK(r.error()[0].path == "current-context");
    CHECK(r.error()[0].location.line == 30);
  }
  SECTION("an unknown cluster and user, both reported, each listing what exists") {
    auto r = parse_kubeconfig(base, "k", "lost");
    REQUIRE_FALSE(r);
    REQUIRE(r.error().size() == 2);
    const Diagnostic* cluster = find_path(r.error(), "contexts[lost].context.cluster");
    const Diagnostic* user = find_path(r.error(), "contexts[lost].context.user");
    REQUIRE(cluster != nullptr);
    REQUIRE(user != nullptr);
    CHECK_THAT(cluster->message, Catch::Contains("'nowhere'") && Catch::Contains("c1, noserver, ftp, proxied"));
    CHECK_THAT(user->message, Catch::Contains("'nobody'") && Catch::Contains("u1"));
  }
  SECTION("a missing server and bad base64 together") {
    auto r = parse_kubeconfig(base, "k", "broken");
    REQUIRE_FALSE(r);
    CHECK(r.error().size() == 2);
    CHECK(has_path(r.error(), "clusters[noserver].cluster.server"));
    CHECK(has_path(r.error(), "clusters[noserver].cluster.certificate-authority-data"));
  }
  SECTION("a server that is not http(s)") {
    auto r = parse_kubeconfig(base, "k", "ftp");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error()[0].message, Catch::Contains("not an http:// or https:// URL"));
  }
  SECTION("connection settings gaia does not implement are refused, not ignored") {
    auto r = parse_kubeconfig(base, "k", "proxied");
    REQUIRE_FALSE(r);
    CHECK(r.error().size() == 2);
    CHECK(has_path(r.error(), "clusters[proxied].cluster.proxy-url"));
    CHECK(has_path(r.error(), "clusters[proxied].cluster.tls-server-name"));
  }
  SECTION("the good one") {
    auto r = parse_kubeconfig(base, "k", "good");
    REQUIRE(r);
    CHECK(r->token == "abc");
  }
}

TEST_CASE("kubeconfig: unreadable files and contradictions and broken YAML", "[kube][kubeconfig]") {
  test::TempDir dir("gaia-kubeconfig");
  dir.write("not-pem.crt", "hello");
  dir.write("empty-token", "\n");
  auto path = dir.write("config", R"(clusters:
- name: c
  cluster:
    server: https://c.example
    certificate-authority: missing/ca.crt
    certificate-authority-data: Zm9v
    insecure-skip-tls-verify: maybe
- name: d
  cluster:
    server: https://d.example
    certificate-authority: not-pem.crt
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    tokenFile: empty-token
    client-certificate: absent.crt
    client-key-data: Zm9v
contexts:
- name: c
  context: {cluster: c, user: u}
- name: d
  context: {cluster: d}
current-context: c
)");
  SECTION("each problem of the cluster and the user") {
    auto r = load_kubeconfig(path);
    REQUIRE_FALSE(r);
    INFO(format_diagnostics(r.error()));
    CHECK(has_path(r.error(), "clusters[c].cluster.certificate-authority"));  // Both set.
    CHECK(has_path(r.error(), "clusters[c].cluster.insecure-skip-tls-verify"));
    CHECK(has_path(r.error(), "users[u].user.tokenFile"));       // Empty.
    CHECK(has_path(r.error(), "users[u].user.client-certificate"));  // Cannot be read.
    CHECK(has_path(r.error(), "users[u].user.client-key-data"));     // Not PEM.
    for (const auto& d : r.error()) CHECK(d.location.file == path.string());
    CHECK_THAT(all_text(r.error()), Catch::Contains((dir.path() / "absent.crt").string()));
  }
  SECTION("a file that is not PEM; a CA together with insecure-skip-tls-verify") {
    auto r = load_kubeconfig(path, "d");
    REQUIRE_FALSE(r);
    INFO(format_diagnostics(r.error()));
    CHECK(has_path(r.error(), "clusters[d].cluster.certificate-authority"));
    CHECK_THAT(all_text(r.error()), Catch::Contains("PEM"));
  }
  SECTION("broken YAML is located") {
    auto r = parse_kubeconfig("clusters: [\n  - {name: x\n", "cfg");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error()[0].message, Catch::Contains("invalid YAML"));
    CHECK(r.error()[0].location.line > 0);
  }
  SECTION("not a map") {
    auto r = parse_kubeconfig("- a\n- b\n", "cfg");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error()[0].message, Catch::Contains("expected a kubeconfig"));
  }
}
