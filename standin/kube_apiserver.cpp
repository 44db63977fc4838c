// The stand-in API server's life (listening, restarting, stopping), the dispatch of
// every request (authentication, fault injection, routing to the verbs) and the public
// accessors. The verbs are in handlers.cpp, pods.cpp and watch.cpp.

#include "standin/kube_apiserver.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "standin/server_impl.hpp"

namespace gaia::standin {

using detail::ApiError;
using detail::ApiReply;
using detail::ApiRequest;
using detail::is_true;
using nlohmann::json;

namespace {

// Each watch holds a thread of the pool for its lifetime, so the pool is large.
constexpr size_t kThreads = 64;

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

ApiError path_not_found() { return ApiError(404, "NotFound", "the server could not find the requested resource"); }

}  // namespace

KubeApiServer::Impl::Impl(ApiServerOptions opts)
    : options(std::move(opts)), store(options.history), rng(std::random_device{}()) {
  authenticating = !options.tokens.empty() || !options.client_ca_file.empty();
  bootstrap();
}

void KubeApiServer::Impl::start_listening(int wanted_port) {
  std::unique_ptr<httplib::Server> s;
  if (!options.cert_file.empty()) {
    std::string cert = options.cert_file.string(), key = options.key_file.string(),
                ca = options.client_ca_file.string();
    // Built by hand rather than with SSLServer's CA argument, which would make a client
    // certificate mandatory: here a bearer token must do as well.
    s = std::make_unique<httplib::SSLServer>([cert, key, ca](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      if (SSL_CTX_use_certificate_chain_file(&ctx, cert.c_str()) != 1) return false;
      if (SSL_CTX_use_PrivateKey_file(&ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) return false;
      if (!ca.empty()) {
        if (SSL_CTX_load_verify_locations(&ctx, ca.c_str(), nullptr) != 1) return false;
        SSL_CTX_set_client_CA_list(&ctx, SSL_load_client_CA_file(ca.c_str()));
        SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
      }
      return true;
    });
  } else {
    s = std::make_unique<httplib::Server>();
  }
  if (!s->is_valid()) throw std::runtime_error("gaia-kube-standin: cannot load the TLS certificate or key");
  s->new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
  httplib::Server::Handler handler = [this](const httplib::Request& q, httplib::Response& r) { handle(q, r); };
  s->Get(".*", handler);
  s->Post(".*", handler);
  s->Put(".*", handler);
  s->Patch(".*", handler);
  s->Delete(".*", handler);

  if (wanted_port == 0) {
    port = s->bind_to_any_port("127.0.0.1");
    if (port < 0) throw std::runtime_error("gaia-kube-standin: cannot bind a port on 127.0.0.1");
  } else {
    // After a restart the old connections may linger a moment; SO_REUSEADDR (which
    // cpp-httplib sets) covers TIME_WAIT, a short retry the rest.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!s->bind_to_port("127.0.0.1", wanted_port)) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error(fmt::format("gaia-kube-standin: cannot bind 127.0.0.1:{}", wanted_port));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    port = wanted_port;
  }
  httplib::Server* raw = s.get();
  server = std::move(s);
  listener = std::thread([raw] { raw->listen_after_bind(); });
  // stop() is a no-op until the accept loop runs, so wait for it: a restart or the
  // destructor right after must find it running.
  while (!raw->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void KubeApiServer::Impl::stop_listening() {
  if (!server) return;
  server->stop();
  drop_connections();
  if (listener.joinable()) listener.join();
  server.reset();
}

namespace {

// Calls `f(fd, peer_port)` for every connected TCP socket of this process whose local
// address is 127.0.0.1:`port`: the connections the server accepted (client sockets of
// the same process have the server's port as their peer port, not their local one).
template <class F>
void for_each_connection(int port, F&& f) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return;
  int own = ::dirfd(dir);
  while (dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || fd == own) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof local, peer_len = sizeof peer;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (local.ss_family != AF_INET) continue;
    const auto* local_in = reinterpret_cast<const sockaddr_in*>(&local);
    if (ntohs(local_in->sin_port) != port || local_in->sin_addr.s_addr != htonl(INADDR_LOOPBACK)) continue;
    if (::getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    if (peer.ss_family != AF_INET) continue;
    f(static_cast<int>(fd), static_cast<int>(ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port)));
  }
  ::closedir(dir);
}

}  // namespace

void KubeApiServer::Impl::drop_connections() {
  // cpp-httplib's stop() closes the listening socket only; an idle keep-alive
  // connection would hold its worker (and the join) for the keep-alive timeout. A
  // restart is meant to look like a crash, so every accepted connection is shut down.
  for_each_connection(port, [](int fd, int) { ::shutdown(fd, SHUT_RDWR); });
}

int KubeApiServer::Impl::connection_fd(int peer_port) const {
  int found = -1;
  for_each_connection(port, [&](int fd, int peer) {
    if (peer == peer_port) found = fd;
  });
  return found;
}

void KubeApiServer::Impl::authenticate(const httplib::Request& request) const {
  if (!authenticating) return;
  std::string auth = request.get_header_value("Authorization");
  if (auth.starts_with("Bearer ")) {
    std::string token = auth.substr(7);
    for (const std::string& t : options.tokens)
      if (!t.empty() && t == token) return;
  }
  // The TLS handshake already refused certificates the CA did not sign; a certificate
  // here is a verified one.
  if (request.ssl && !options.client_ca_file.empty()) {
    if (X509* cert = SSL_get1_peer_certificate(request.ssl)) {
      X509_free(cert);
      if (SSL_get_verify_result(request.ssl) == X509_V_OK) return;
    }
  }
  throw ApiError(401, "Unauthorized", "Unauthorized");
}

ApiRequest KubeApiServer::Impl::parse_request(const httplib::Request& request) const {
  ApiRequest r;
  std::vector<std::string> parts = split_path(request.path);
  size_t at = 0;
  std::string group, version;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    at = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    at = 3;
  } else {
    throw path_not_found();
  }
  bool watch_path = false;
  if (at < parts.size() && parts[at] == "watch") {
    watch_path = true;
    ++at;
  }
  if (at >= parts.size()) throw path_not_found();
  // "namespaces/NS/RESOURCE..." is a namespaced path; "namespaces[/NAME[/status]]" the
  // namespaces themselves.
  if (parts[at] == "namespaces" && at + 2 < parts.size()) {
    if (const detail::ResourceInfo* inner = detail::find_resource(group, version, parts[at + 2]);
        inner && inner->namespaced) {
      r.ns = parts[at + 1];
      at += 2;
    }
  }
  r.resource = detail::find_resource(group, version, parts[at]);
  if (!r.resource) throw path_not_found();
  if (!r.ns.empty() && !r.resource->namespaced) throw path_not_found();
  if (at + 1 < parts.size()) r.name = parts[at + 1];
  if (at + 2 < parts.size()) r.subresource = parts[at + 2];
  if (at + 3 < parts.size()) throw path_not_found();
  if (!r.subresource.empty() && std::find(r.resource->subresources.begin(), r.resource->subresources.end(),
                                          r.subresource) == r.resource->subresources.end())
    throw path_not_found();
  // A named object of a namespaced resource needs its namespace in the path.
  if (r.resource->namespaced && r.ns.empty() && !r.name.empty()) throw path_not_found();

  for (const auto& [k, v] : request.params) r.params.emplace(k, v);
  r.body = request.body;
  r.content_type = request.get_header_value("Content-Type");
  if (auto semi = r.content_type.find(';'); semi != std::string::npos) r.content_type.resize(semi);
  while (!r.content_type.empty() && r.content_type.back() == ' ') r.content_type.pop_back();

  const std::string& m = request.method;
  if (m == "GET") {
    r.verb = watch_path || is_true(r.param("watch")) ? "WATCH" : r.name.empty() ? "LIST" : "GET";
  } else if (m == "POST") {
    if (!r.name.empty() && r.subresource.empty()) throw ApiError(405, "MethodNotAllowed", "POST to an object");
    if (!r.subresource.empty() && r.subresource != "binding" && r.subresource != "eviction")
      throw ApiError(405, "MethodNotAllowed", fmt::format("POST is not supported on {}", r.subresource));
    if (r.resource->namespaced && r.ns.empty()) throw path_not_found();
    r.verb = "POST";
  } else if (m == "PUT" || m == "PATCH" || m == "DELETE") {
    if (r.name.empty())
      throw ApiError(405, "MethodNotAllowed", fmt::format("{} needs an object name (collections are not supported)", m));
    if (m == "DELETE" && !r.subresource.empty()) throw ApiError(405, "MethodNotAllowed", "DELETE of a subresource");
    if (r.subresource == "binding" || r.subresource == "eviction")
      throw ApiError(405, "MethodNotAllowed", fmt::format("{} is not supported on {}", m, r.subresource));
    r.verb = m;
  } else {
    throw ApiError(405, "MethodNotAllowed", fmt::format("the method {} is not supported", m));
  }
  std::string target = r.resource->plural + (r.subresource.empty() ? "" : "/" + r.subresource);
  if (r.verb == "LIST") {
    r.keys = {"GET " + target, "LIST " + target};
  } else {
    r.keys = {r.verb + " " + target};
  }
  return r;
}

void KubeApiServer::Impl::count_and_inject_faults(const ApiRequest& request) {
  std::lock_guard lock(mutex);
  for (const std::string& key : request.keys) ++counts[key];
  for (auto it = fail_rules.begin(); it != fail_rules.end(); ++it) {
    bool hit = it->match.empty() || std::any_of(request.keys.begin(), request.keys.end(), [&](const std::string& k) {
                 return k.find(it->match) != std::string::npos;
               });
    if (!hit) continue;
    ApiError error(it->status, detail::reason_for(it->status),
                   fmt::format("injected failure ({}) for {}", it->status, request.keys.front()));
    error.retry_after = it->retry_after;
    if (--it->count <= 0) fail_rules.erase(it);
    throw error;
  }
}

bool KubeApiServer::Impl::take_conflict() {
  if (conflicts_left <= 0) return false;
  --conflicts_left;
  return true;
}

ApiReply KubeApiServer::Impl::dispatch(const ApiRequest& r) {
  const std::string& v = r.verb;
  if (v == "GET") return get_object(r);
  if (v == "LIST") return list_objects(r);
  if (v == "POST") {
    if (r.subresource == "binding") return bind_pod(r);
    if (r.subresource == "eviction") return evict_pod(r);
    return create_object(r);
  }
  if (v == "PUT") return replace_object(r);
  if (v == "PATCH") return patch_object(r);
  if (v == "DELETE") return delete_object(r);
  throw ApiError(405, "MethodNotAllowed", "unsupported verb " + v);
}

void KubeApiServer::Impl::handle(const httplib::Request& request, httplib::Response& response) {
  const std::string& path = request.path;
  if (path == "/healthz" || path == "/readyz" || path == "/livez") {
    response.set_content("ok", "text/plain");
    return;
  }
  ApiReply reply;
  std::string retry_after;
  try {
    authenticate(request);
    if (request.method == "GET") {
      if (json doc = detail::discovery(path, port); !doc.is_null()) {
        ApiRequest r;
        r.keys = {"GET " + path};
        count_and_inject_faults(r);
        response.set_content(doc.dump(), "application/json");
        return;
      }
    }
    ApiRequest r = parse_request(request);
    count_and_inject_faults(r);
    if (r.verb == "WATCH") {
      start_watch(r, request.remote_port, response);
      return;
    }
    {
      std::lock_guard lock(mutex);
      reply = dispatch(r);
    }
    changed.notify_all();
  } catch (const ApiError& e) {
    reply = {e.code, detail::status_object(e.code, e.reason, e.message, e.details)};
    retry_after = e.retry_after;
  } catch (const json::exception& e) {
    // A field of the wrong JSON type somewhere in the body.
    reply = {400, detail::status_object(400, "BadRequest", fmt::format("malformed request body: {}", e.what()))};
  } catch (const std::exception& e) {
    reply = {500, detail::status_object(500, "InternalError", fmt::format("internal error: {}", e.what()))};
  }
  response.status = reply.status;
  if (!retry_after.empty()) response.set_header("Retry-After", retry_after);
  response.set_content(reply.body.dump(), "application/json");
}

// The public face.

KubeApiServer::KubeApiServer(ApiServerOptions options) : m_impl(std::make_unique<Impl>(std::move(options))) {
  m_impl->start_listening(m_impl->options.port);
}

KubeApiServer::~KubeApiServer() {
  {
    std::lock_guard lock(m_impl->mutex);
    m_impl->stopping = true;
  }
  m_impl->changed.notify_all();
  std::lock_guard lifecycle(m_impl->lifecycle);
  m_impl->stop_listening();
}

int KubeApiServer::port() const { return m_impl->port; }

std::string KubeApiServer::url() const {
  return fmt::format("{}://127.0.0.1:{}", m_impl->options.cert_file.empty() ? "http" : "https", m_impl->port);
}

void KubeApiServer::fail_next(int status, int count, std::string retry_after, std::string match) {
  std::lock_guard lock(m_impl->mutex);
  if (count > 0) m_impl->fail_rules.push_back({status, count, std::move(retry_after), std::move(match)});
}

void KubeApiServer::conflict_next(int count) {
  std::lock_guard lock(m_impl->mutex);
  m_impl->conflicts_left = count;
}

void KubeApiServer::drop_watches() {
  {
    std::lock_guard lock(m_impl->mutex);
    ++m_impl->drop_generation;
  }
  m_impl->changed.notify_all();
}

void KubeApiServer::compact() {
  {
    std::lock_guard lock(m_impl->mutex);
    m_impl->store.compact();
    ++m_impl->compact_generation;
  }
  m_impl->changed.notify_all();
}

void KubeApiServer::restart(std::chrono::milliseconds down) {
  std::lock_guard lifecycle(m_impl->lifecycle);
  {
    std::lock_guard lock(m_impl->mutex);
    ++m_impl->serve_generation;
  }
  m_impl->changed.notify_all();
  int port = m_impl->port;
  m_impl->stop_listening();
  if (down.count() > 0) std::this_thread::sleep_for(down);
  m_impl->start_listening(port);
}

std::optional<json> KubeApiServer::object(const std::string& resource, const std::string& ns,
                                          const std::string& name) const {
  const detail::ResourceInfo* info = detail::find_bucket(resource);
  if (!info) return std::nullopt;
  std::lock_guard lock(m_impl->mutex);
  const json* found = m_impl->store.find(info->bucket, ns, name);
  if (!found) return std::nullopt;
  return m_impl->present(*info, *found);
}

std::vector<json> KubeApiServer::objects(const std::string& resource, const std::string& ns) const {
  std::vector<json> out;
  const detail::ResourceInfo* info = detail::find_bucket(resource);
  if (!info) return out;
  std::lock_guard lock(m_impl->mutex);
  for (const json* o : m_impl->store.list(info->bucket, ns)) out.push_back(m_impl->present(*info, *o));
  return out;
}

int64_t KubeApiServer::resource_version() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->store.revision();
}

RequestCounts KubeApiServer::request_counts() const {
  std::lock_guard lock(m_impl->mutex);
  return m_impl->counts;
}

}  // namespace gaia::standin
