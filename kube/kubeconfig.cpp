#include "kube/kubeconfig.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "net/base64.hpp"

namespace gaia::kube {
namespace {

namespace fs = std::filesystem;

// What to use instead of a credential gaia refuses; the same for all of them.
const char* k_token_hint =
    "create a service account token: kubectl create token NAME, and put it in the kubeconfig's user "
    "entry as token: (or use a client certificate: client-certificate-data and client-key-data)";

std::string join(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

std::optional<std::string> read_file(const fs::path& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    *error = "read error";
    return std::nullopt;
  }
  return text.str();
}

class Parser {
 public:
  Parser(const fs::path& path) : m_path(path), m_file(path.string()) {}

  Result<ClusterConfig> run(std::string_view text, const std::string& wanted_context) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      Location where{m_file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
      return fail(Diagnostic{where, "", fmt::format("invalid YAML: {}", e.msg), ""});
    }
    if (!root.IsMap()) {
      return fail(Diagnostic{Location{m_file, 1, 1}, "", "expected a kubeconfig (a map with clusters, users and contexts)",
                             "kubectl config view --minify --raw writes one for the current context"});
    }
    m_out.source = m_file;

    // Which context: the one asked for, or the file's current-context.
    std::string context_name = wanted_context;
    std::string context_path = "contexts";
    if (context_name.empty()) {
      context_path = "current-context";
      if (auto current = optional_string(root, "current-context", "")) context_name = *current;
      if (context_name.empty()) {
        error(location(root), "current-context",
              fmt::format("no context was named and the file sets no current-context; its contexts are: {}",
                          join(names(root, "contexts"))),
              "name a context, or set one: kubectl config use-context NAME");
        return fail(std::move(m_errors));
      }
    }
    m_out.context = context_name;

    std::optional<YAML::Node> context = find_entry(root, "contexts", context_name);
    if (!context) {
      error(location(root, context_path), context_path,
            fmt::format("there is no context '{}' in the file; its contexts are: {}", context_name,
                        join(names(root, "contexts"))),
            "");
      return fail(std::move(m_errors));
    }
    std::string prefix = fmt::format("contexts[{}].context", context_name);
    std::optional<YAML::Node> found_body = entry_body(*context, "context", prefix);
    if (!found_body) return fail(std::move(m_errors));
    const YAML::Node& body = *found_body;

    auto cluster_name = optional_string(body, "cluster", prefix);
    auto user_name = optional_string(body, "user", prefix);
    if (auto ns = optional_string(body, "namespace", prefix)) m_out.namespace_name = *ns;

    if (!cluster_name || cluster_name->empty()) {
      if (!body["cluster"] || body["cluster"].IsScalar())
        error(location(body), prefix + ".cluster", "the context names no cluster", "");
    } else if (auto cluster = find_entry(root, "clusters", *cluster_name)) {
      read_cluster(*cluster, fmt::format("clusters[{}].cluster", *cluster_name));
    } else {
      error(location(body, "cluster"), prefix + ".cluster",
            fmt::format("there is no cluster '{}' in the file; its clusters are: {}", *cluster_name,
                        join(names(root, "clusters"))),
            "");
    }

    // A context without a user reaches the server anonymously, as kubectl does.
    if (user_name && !user_name->empty()) {
      if (auto user = find_entry(root, "users", *user_name))
        read_user(*user, fmt::format("users[{}].user", *user_name));
      else
        error(location(body, "user"), prefix + ".user",
              fmt::format("there is no user '{}' in the file; its users are: {}", *user_name,
                          join(names(root, "users"))),
              "");
    }

    if (!m_errors.empty()) return fail(std::move(m_errors));
    return std::move(m_out);
  }

 private:
  Location location(const YAML::Node& node) const {
    if (node) {
      YAML::Mark mark = node.Mark();
      if (!mark.is_null() && mark.line >= 0) return Location{m_file, mark.line + 1, mark.column + 1};
    }
    return Location{m_file, 0, 0};
  }

  // Where `key` is written in `map` (the key itself, as an editor shows the line), or the
  // map when the key is absent.
  Location location(const YAML::Node& map, const char* key) const {
    if (map.IsMap())
      for (const auto& item : map)
        if (item.first.IsScalar() && item.first.Scalar() == key) return location(item.first);
    return location(map);
  }
  Location location(const YAML::Node& map, const std::string& key) const { return location(map, key.c_str()); }

  void error(Location where, std::string path, std::string message, std::string hint) {
    m_errors.push_back(Diagnostic{std::move(where), std::move(path), std::move(message), std::move(hint)});
  }

  // The names of the entries of a list (contexts, clusters, users), for messages.
  static std::vector<std::string> names(const YAML::Node& root, const char* list) {
    std::vector<std::string> out;
    YAML::Node entries = root[list];
    if (!entries.IsSequence()) return out;
    for (const auto& entry : entries)
      if (entry.IsMap() && entry["name"] && entry["name"].IsScalar()) out.push_back(entry["name"].Scalar());
    return out;
  }

  // The entry of `list` named `name`; the first one, as kubectl takes, when repeated.
  std::optional<YAML::Node> find_entry(const YAML::Node& root, const char* list, const std::string& name) {
    YAML::Node entries = root[list];
    if (!entries || entries.IsNull()) return std::nullopt;
    if (!entries.IsSequence()) {
      error(location(entries), list, "expected a list of entries, each with a name", "");
      return std::nullopt;
    }
    for (const auto& entry : entries)
      if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() && entry["name"].Scalar() == name) return entry;
    return std::nullopt;
  }

  // The map under an entry's `key` ("cluster", "user", "context"); an empty one is
  // allowed (a user without credentials).
  std::optional<YAML::Node> entry_body(const YAML::Node& entry, const char* key, const std::string& path) {
    YAML::Node body = entry[key];
    if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!body.IsMap()) {
      error(location(entry, key), path, "expected a map", "");
      return std::nullopt;
    }
    return body;
  }

  // A string field, nothing when absent; an error when it is not a string.
  std::optional<std::string> optional_string(const YAML::Node& map, const char* key, const std::string& prefix) {
    YAML::Node node = map[key];
    if (!node || node.IsNull()) return std::nullopt;
    if (!node.IsScalar()) {
      error(location(map, key), prefix.empty() ? std::string(key) : prefix + "." + key, "expected a string", "");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<bool> optional_bool(const YAML::Node& map, const char* key, const std::string& prefix) {
    YAML::Node node = map[key];
    if (!node || node.IsNull()) return std::nullopt;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      error(location(map, key), prefix + "." + key, "expected true or false", "");
      return std::nullopt;
    }
    return value;
  }

  // PEM text from `key`-data (base64, which may be wrapped over lines) or from the file
  // named by `key` (relative to the kubeconfig's folder); empty when neither is set.
  // Only names and paths go into messages: the text may be a private key.
  std::string pem(const YAML::Node& map, const std::string& key, const std::string& prefix) {
    std::string data_key = key + "-data";
    auto data = optional_string(map, data_key.c_str(), prefix);
    auto file = optional_string(map, key.c_str(), prefix);
    if (data && file && !data->empty() && !file->empty()) {
      error(location(map, key), prefix + "." + key, fmt::format("both {} and {} are set", key, data_key),
            fmt::format("keep one of them"));
      return {};
    }
    std::string text;
    if (data && !data->empty()) {
      std::string compact;
      for (char c : *data)
        if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
      auto decoded = base64_decode(compact);
      if (!decoded) {
        error(location(map, data_key), prefix + "." + data_key, "is not valid base64",
              fmt::format("{} holds the PEM file base64-encoded: base64 -w0 FILE", data_key));
        return {};
      }
      text = std::move(*decoded);
    } else if (file && !file->empty()) {
      fs::path resolved = *file;
      if (resolved.is_relative()) resolved = m_path.parent_path() / resolved;
      std::string why;
      auto read = read_file(resolved, &why);
      if (!read) {
        error(location(map, key), prefix + "." + key, fmt::format("cannot read '{}': {}", resolved.string(), why),
              "relative paths are resolved from the kubeconfig's folder");
        return {};
      }
      text = std::move(*read);
    } else {
      return {};
    }
    if (text.find("-----BEGIN ") == std::string::npos) {
      std::string where = data && !data->empty() ? data_key : key;
      error(location(map, where), prefix + "." + where, "does not hold PEM text (no -----BEGIN line)",
            "");
      return {};
    }
    return text;
  }

  void read_cluster(const YAML::Node& entry, const std::string& prefix) {
    std::optional<YAML::Node> found = entry_body(entry, "cluster", prefix);
    if (!found) return;
    const YAML::Node& cluster = *found;
    auto server = optional_string(cluster, "server", prefix);
    if (!server || server->empty()) {
      if (!cluster["server"] || cluster["server"].IsScalar() || cluster["server"].IsNull())
        error(cluster["server"] ? location(cluster, "server") : location(entry), prefix + ".server",
              "the cluster names no server", "give the API server's URL, e.g. server: https://10.0.0.1:6443");
    } else if (!server->starts_with("https://") && !server->starts_with("http://")) {
      error(location(cluster, "server"), prefix + ".server",
            fmt::format("'{}' is not an http:// or https:// URL", *server),
            "give the API server's URL, e.g. server: https://10.0.0.1:6443");
    } else {
      std::string url = *server;
      while (url.ends_with('/')) url.pop_back();
      m_out.server = std::move(url);
    }
    // Connection settings gaia does not implement are refused rather than ignored:
    // ignored, they would send gaia somewhere else than kubectl goes.
    if (auto name = optional_string(cluster, "tls-server-name", prefix); name && !name->empty())
      error(location(cluster, "tls-server-name"), prefix + ".tls-server-name",
            "tls-server-name is not supported: gaia checks the certificate against the server's host",
            "point server: at a name or address the server's certificate holds");
    if (auto proxy = optional_string(cluster, "proxy-url", prefix); proxy && !proxy->empty())
      error(location(cluster, "proxy-url"), prefix + ".proxy-url",
            "proxy-url is not supported: gaia connects to the server directly",
            "remove proxy-url when the server can be reached without the proxy");
    m_out.ca_pem = pem(cluster, "certificate-authority", prefix);
    if (auto insecure = optional_bool(cluster, "insecure-skip-tls-verify", prefix)) {
      m_out.insecure_skip_tls_verify = *insecure;
      // kubectl refuses the pair as well: trusting a CA and trusting anyone contradict.
      if (*insecure && !m_out.ca_pem.empty())
        error(location(cluster, "insecure-skip-tls-verify"), prefix + ".insecure-skip-tls-verify",
              "a certificate authority and insecure-skip-tls-verify are both set",
              "remove insecure-skip-tls-verify: the certificate authority is what makes the connection safe");
    }
  }

  void refuse(const YAML::Node& user, const char* key, const std::string& prefix, std::string message) {
    error(location(user, key), prefix + "." + key, std::move(message), k_token_hint);
  }

  void read_user(const YAML::Node& entry, const std::string& prefix) {
    std::optional<YAML::Node> found = entry_body(entry, "user", prefix);
    if (!found) return;
    const YAML::Node& user = *found;
    // Refused first, each on its own: a user fixes all of them in one round.
    if (YAML::Node exec = user["exec"]; exec && !exec.IsNull()) {
      std::string command = exec.IsMap() && exec["command"] && exec["command"].IsScalar()
                                ? fmt::format(" ('{}')", exec["command"].Scalar())
                                : "";
      refuse(user, "exec", prefix,
             fmt::format("the user's credentials come from running a program{}; gaia never runs a command "
                         "named by a configuration file",
                         command));
    }
    if (YAML::Node provider = user["auth-provider"]; provider && !provider.IsNull()) {
      std::string name = provider.IsMap() && provider["name"] && provider["name"].IsScalar()
                             ? fmt::format(" '{}'", provider["name"].Scalar())
                             : "";
      refuse(user, "auth-provider", prefix,
             fmt::format("the legacy auth-provider{} is not supported (it runs or refreshes credentials "
                         "outside the kubeconfig)",
                         name));
    }
    for (const char* key : {"username", "password"}) {
      if (YAML::Node node = user[key]; node && !node.IsNull()) {
        refuse(user, key, prefix,
               "basic authentication (username and password) was removed from Kubernetes in 1.19");
        break;
      }
    }

    m_out.client_cert_pem = pem(user, "client-certificate", prefix);
    m_out.client_key_pem = pem(user, "client-key", prefix);
    auto set = [&](const char* key) { return user[key] && !user[key].IsNull() && user[key].Scalar() != ""; };
    bool has_cert = set("client-certificate") || set("client-certificate-data");
    bool has_key = set("client-key") || set("client-key-data");
    if (has_cert != has_key)
      error(location(user), prefix,
            has_cert ? "a client certificate is set without its key" : "a client key is set without its certificate",
            "set both client-certificate(-data) and client-key(-data)");

    // A token in the file wins over tokenFile, as in kubectl.
    auto token = optional_string(user, "token", prefix);
    auto token_file = optional_string(user, "tokenFile", prefix);
    if (token && !token->empty()) {
      m_out.token = *token;
    } else if (token_file && !token_file->empty()) {
      fs::path resolved = *token_file;
      if (resolved.is_relative()) resolved = m_path.parent_path() / resolved;
      std::string why;
      auto read = read_file(resolved, &why);
      if (!read) {
        error(location(user, "tokenFile"), prefix + ".tokenFile",
              fmt::format("cannot read '{}': {}", resolved.string(), why),
              "relative paths are resolved from the kubeconfig's folder");
      } else {
        std::string text = std::move(*read);
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
        if (text.empty())
          error(location(user, "tokenFile"), prefix + ".tokenFile", fmt::format("'{}' is empty", resolved.string()),
                k_token_hint);
        m_out.token = std::move(text);
      }
    }
  }

  fs::path m_path;
  std::string m_file;
  ClusterConfig m_out;
  Diagnostics m_errors;
};

}  // namespace

Result<ClusterConfig> parse_kubeconfig(std::string_view text, const fs::path& path, const std::string& context) {
  return Parser(path).run(text, context);
}

Result<ClusterConfig> load_kubeconfig(const fs::path& path, const std::string& context) {
  std::string why;
  auto text = read_file(path, &why);
  if (!text)
    return fail(Diagnostic{Location{path.string(), 0, 0}, "", fmt::format("cannot read the kubeconfig: {}", why),
                           "kubectl config view --minify --raw > FILE writes one for the current context"});
  return parse_kubeconfig(*text, path, context);
}

}  // namespace gaia::kube
