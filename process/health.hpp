#pragma once
// Health checks of the process backend (docs/spec.md 5.9), run from the observing gaia
// process against a copy: tcp connects to a named port of the instance, http sends
// `GET /path` (HTTP/1.0 over a plain socket) and wants a 2xx or 3xx answer, exec runs
// `sh -c TARGET` in the copy's work dir with its env and wants exit status 0. Each
// gives up after the check's timeout.

#include <chrono>
#include <expected>
#include <filesystem>
#include <string>

#include "process/copy_files.hpp"

namespace gaia::process {

// Runs `config.health` once against the copy described by `config`, whose working
// directory is `work_dir`. The error says why it failed ("connection refused", "HTTP
// 503", "exit code 1", "timed out after 1s").
std::expected<void, std::string> run_health_check(const CopyConfig& config, const std::filesystem::path& work_dir);

// The individual checks, for tests and for the CLI.
std::expected<void, std::string> check_tcp(const std::string& address, int port, std::chrono::milliseconds timeout);
std::expected<void, std::string> check_http(const std::string& address, int port, const std::string& path,
                                            std::chrono::milliseconds timeout);
std::expected<void, std::string> check_exec(const std::string& command, const std::map<std::string, std::string>& env,
                                            const std::filesystem::path& work_dir, std::chrono::milliseconds timeout);

}  // namespace gaia::process
