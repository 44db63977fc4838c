#include "controllers/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <istream>
#include <limits>
#include <sstream>
#include <cmath>
#include <string_view>
#include <unordered_map>

namespace gaia::sim {

namespace {

constexpr size_t kMaxTraceErrors = 20;

// Splits one CSV row. The trace's fields never hold commas or quotes, so a plain split
// is the format, not a shortcut.
std::vector<std::string_view> split_row(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

// Reads rows of `in` one line at a time (the real batch_instance.csv is over 100 GB),
// calling `row(fields, line_number)`; skips blank lines and a header line (a first row
// whose first field is the schema's first column name).
template <class F>
void for_each_row(std::istream& in, std::string_view header, F&& row) {
  int64_t line_no = 0;
  std::string buf;
  while (std::getline(in, buf)) {
    ++line_no;
    std::string_view line = buf;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line_no == 1 && line.starts_with(header)) continue;
    row(split_row(line), static_cast<int>(std::min<int64_t>(line_no, std::numeric_limits<int>::max())));
  }
}

// Collects a file's errors: the first kMaxTraceErrors with their lines, then a count.
class RowErrors {
 public:
  explicit RowErrors(Diagnostics& out) : m_out(out) {}
  void add(const std::string& file, int line, std::string message, std::string hint = "") {
    if (++m_count > kMaxTraceErrors) return;
    m_out.push_back(Diagnostic{{file, line, 0}, "", std::move(message), std::move(hint)});
  }
  void finish(const std::string& file) {
    if (m_count > kMaxTraceErrors)
      m_out.push_back(Diagnostic{{file, 0, 0}, "", fmt::format("{} more malformed rows not shown", m_count - kMaxTraceErrors), ""});
    m_count = 0;
  }

 private:
  Diagnostics& m_out;
  size_t m_count = 0;
};

// A field as a number; nullopt when empty (the trace leaves unknown values empty).
std::optional<double> number_field(std::string_view f, bool* bad) {
  if (f.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || p != f.data() + f.size() || !std::isfinite(v)) {
    *bad = true;
    return std::nullopt;
  }
  return v;
}

// Role and app names become parts of instance keys ("0.R2_1.j_3.default"), where dots
// and slashes separate parts.
std::string key_safe(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '.' || c == '/' || c == ' ') c = '-';
  return out;
}

int64_t memory_bytes(double normalised, const AlibabaOptions& scale) {
  return static_cast<int64_t>(std::llround(normalised / 100.0 * static_cast<double>(scale.memory_at_100)));
}

struct ParseCtx {
  const std::string& dir;
  const AlibabaOptions& scale;
  Trace& trace;
  Diagnostics& errors;
  std::string path(const std::string& file) const { return dir.empty() ? file : dir + "/" + file; }
  void skip(const std::string& file, const std::string& why) { ++trace.skipped[fmt::format("{}: {}", file, why)]; }
  // Rows after --until are not kept: a day of the full trace is millions of them.
  bool after_until(const std::string& file, double t) {
    if (scale.until_s <= 0 || t <= static_cast<double>(scale.until_s)) return false;
    skip(file, "after --until");
    return true;
  }
};

void read_machines(ParseCtx& c, std::istream& text) {
  const std::string file = "machine_meta.csv", path = c.path(file);
  RowErrors errs(c.errors);
  for_each_row(text, "machine_id", [&](const std::vector<std::string_view>& f, int line) {
    ++c.trace.rows;
    if (f.size() != 7) {
      errs.add(path, line, fmt::format("expected 7 fields (machine_id,time_stamp,failure_domain_1,failure_domain_2,cpu_num,mem_size,status), found {}", f.size()));
      return;
    }
    bool bad = false;
    auto t = number_field(f[1], &bad), cpu = number_field(f[4], &bad), mem = number_field(f[5], &bad);
    if (bad || f[0].empty()) {
      errs.add(path, line, "machine_id must be set and time_stamp, cpu_num, mem_size must be numbers");
      return;
    }
    if (!t || !cpu || !mem || *cpu <= 0 || *mem <= 0 || *t < 0) {
      c.skip(file, "no time, cpu or memory");
      return;
    }
    if (c.after_until(file, *t)) return;
    TraceMachineEvent e;
    e.time_s = static_cast<int64_t>(*t);
    e.machine = key_safe(f[0]);
    e.up = f[6] == "USING";
    e.capacity.cpu_millis = static_cast<int64_t>(std::llround(*cpu * 1000.0));
    e.capacity.memory_bytes = memory_bytes(*mem, c.scale);
    // failure_domain_1 is the wider domain (an enumeration over the cluster), 2 the
    // narrower one; gaia spreads over zone and rack the same way.
    e.zone = f[2].empty() ? "" : "fd" + key_safe(f[2]);
    e.rack = f[3].empty() ? "" : e.zone + "-" + key_safe(f[3]);
    c.trace.machine_events.push_back(std::move(e));
  });
  errs.finish(path);
}

void read_batch_tasks(ParseCtx& c, std::istream& text) {
  const std::string file = "batch_task.csv", path = c.path(file);
  RowErrors errs(c.errors);
  for_each_row(text, "task_name", [&](const std::vector<std::string_view>& f, int line) {
    ++c.trace.rows;
    if (f.size() != 9) {
      errs.add(path, line, fmt::format("expected 9 fields (task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem), found {}", f.size()));
      return;
    }
    bool bad = false;
    auto n = number_field(f[1], &bad), start = number_field(f[5], &bad), end = number_field(f[6], &bad);
    auto cpu = number_field(f[7], &bad), mem = number_field(f[8], &bad);
    if (bad || f[0].empty() || f[2].empty()) {
      errs.add(path, line, "task_name and job_name must be set and instance_num, start_time, end_time, plan_cpu, plan_mem must be numbers");
      return;
    }
    if (!n || *n < 1) return c.skip(file, "no instances");
    if (!start || !end || *start <= 0 || *end <= *start) return c.skip(file, "end_time not after start_time");
    if (!cpu || !mem || *cpu <= 0 || *mem <= 0) return c.skip(file, "no plan_cpu or plan_mem");
    if (c.after_until(file, *start)) return;
    if (*n > 1e6) {
      errs.add(path, line, fmt::format("instance_num {} is more than a task of the trace has (1,000,000)", f[1]));
      return;
    }
    TraceTask t;
    t.job = key_safe(f[2]);
    t.name = key_safe(f[0]);
    t.instances = static_cast<int64_t>(*n);
    t.start_s = static_cast<int64_t>(*start);
    t.duration_s = static_cast<int64_t>(*end - *start);
    t.request.cpu_millis = static_cast<int64_t>(std::llround(*cpu * 10.0));  // 100 is one core.
    t.request.memory_bytes = memory_bytes(*mem, c.scale);
    t.band = Band::Nonprod;
    c.trace.tasks.push_back(std::move(t));
  });
  errs.finish(path);
}

// Online services: each container is one instance of its deploy unit (app_du) from its
// first row on, and runs past the end of the trace. Containers of a unit that arrive
// together with the same request form one task.
void read_containers(ParseCtx& c, std::istream& text) {
  const std::string file = "container_meta.csv", path = c.path(file);
  RowErrors errs(c.errors);
  struct Seen {
    int64_t time;
    std::string app;
    Resources request;
  };
  std::unordered_map<std::string, Seen> first;
  std::vector<std::string> order;
  for_each_row(text, "container_id", [&](const std::vector<std::string_view>& f, int line) {
    ++c.trace.rows;
    if (f.size() != 8) {
      errs.add(path, line, fmt::format("expected 8 fields (container_id,machine_id,time_stamp,app_du,status,cpu_request,cpu_limit,mem_size), found {}", f.size()));
      return;
    }
    bool bad = false;
    auto t = number_field(f[2], &bad), cpu = number_field(f[5], &bad), mem = number_field(f[7], &bad);
    number_field(f[6], &bad);
    if (bad || f[0].empty() || f[3].empty()) {
      errs.add(path, line, "container_id and app_du must be set and time_stamp, cpu_request, cpu_limit, mem_size must be numbers");
      return;
    }
    if (!t || *t < 0 || !cpu || !mem || *cpu <= 0 || *mem <= 0) return c.skip(file, "no time, cpu_request or mem_size");
    if (c.after_until(file, *t)) return;
    std::string id(f[0]);
    auto it = first.find(id);
    if (it != first.end()) {
      if (static_cast<int64_t>(*t) < it->second.time) it->second.time = static_cast<int64_t>(*t);
      return;  // Later rows of a container are its status changes.
    }
    Resources r;
    r.cpu_millis = static_cast<int64_t>(std::llround(*cpu * 10.0));
    r.memory_bytes = memory_bytes(*mem, c.scale);
    first.emplace(id, Seen{static_cast<int64_t>(*t), key_safe(f[3]), r});
    order.push_back(id);
  });
  errs.finish(path);
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t>, int64_t> groups;
  for (const auto& id : order) {
    const Seen& s = first.at(id);
    ++groups[{s.app, s.time, s.request.cpu_millis, s.request.memory_bytes}];
  }
  std::map<std::string, int> per_app;
  for (const auto& [k, n] : groups) {
    const auto& [app, time, cpu, mem] = k;
    TraceTask t;
    t.job = app;
    t.name = fmt::format("online{}", per_app[app]++);
    t.instances = n;
    t.start_s = time;
    t.duration_s = 0;
    t.request.cpu_millis = cpu;
    t.request.memory_bytes = mem;
    t.band = Band::Prod;
    c.trace.tasks.push_back(std::move(t));
  }
}

// Mean use per instance of each task, from the instances' cpu_avg and mem_avg.
void read_batch_usage(ParseCtx& c, std::istream& text) {
  const std::string file = "batch_instance.csv", path = c.path(file);
  RowErrors errs(c.errors);
  struct Sum {
    double cpu = 0, mem = 0;
    int64_t n = 0;
  };
  std::map<std::pair<std::string, std::string>, Sum> sums;
  for_each_row(text, "instance_name", [&](const std::vector<std::string_view>& f, int line) {
    ++c.trace.rows;
    if (f.size() != 14) {
      errs.add(path, line, fmt::format("expected 14 fields (instance_name,task_name,job_name,task_type,status,start_time,end_time,machine_id,seq_no,total_seq_no,cpu_avg,cpu_max,mem_avg,mem_max), found {}", f.size()));
      return;
    }
    bool bad = false;
    auto cpu = number_field(f[10], &bad), mem = number_field(f[12], &bad);
    if (bad) {
      errs.add(path, line, "cpu_avg and mem_avg must be numbers");
      return;
    }
    if (!cpu || !mem) return c.skip(file, "no cpu_avg or mem_avg");
    Sum& s = sums[{key_safe(f[2]), key_safe(f[1])}];
    s.cpu += *cpu;
    s.mem += *mem;
    ++s.n;
  });
  errs.finish(path);
  for (auto& t : c.trace.tasks) {
    auto it = sums.find({t.job, t.name});
    if (it == sums.end()) continue;
    const Sum& s = it->second;
    Resources u;
    u.cpu_millis = static_cast<int64_t>(std::llround(s.cpu / static_cast<double>(s.n) * 10.0));
    u.memory_bytes = memory_bytes(s.mem / static_cast<double>(s.n), c.scale);
    t.usage = u;
  }
}

// Turns DAG ids into the names of the tasks in the same job.
void link_dags(Trace& trace) {
  std::map<std::pair<std::string, std::string>, std::string> by_id;
  for (const auto& t : trace.tasks)
    if (auto d = parse_dag_name(t.name); !d.id.empty()) by_id[{t.job, d.id}] = t.name;
  for (auto& t : trace.tasks) {
    for (const auto& dep : parse_dag_name(t.name).deps) {
      auto it = by_id.find({t.job, dep});
      if (it == by_id.end()) {
        ++trace.skipped["batch_task.csv: dependency not in the trace (ignored)"];
        continue;
      }
      if (it->second != t.name) t.deps.push_back(it->second);
    }
  }
}

}  // namespace

DagName parse_dag_name(const std::string& task) {
  DagName out;
  size_t i = 0;
  while (i < task.size() && std::isalpha(static_cast<unsigned char>(task[i]))) ++i;
  if (i == 0 || i == task.size() || !std::isdigit(static_cast<unsigned char>(task[i]))) return out;
  std::vector<std::string> parts;
  std::string cur;
  for (; i < task.size(); ++i) {
    char ch = task[i];
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      cur += ch;
    } else if (ch == '_' && !cur.empty()) {
      parts.push_back(cur);
      cur.clear();
    } else {
      return {};  // "task_Nzg3" and other names carry no DAG.
    }
  }
  if (cur.empty()) return {};
  parts.push_back(cur);
  out.id = parts.front();
  out.deps.assign(parts.begin() + 1, parts.end());
  return out;
}

const std::vector<std::string>& alibaba_v2018_files() {
  static const std::vector<std::string> files = {"machine_meta.csv", "batch_task.csv", "container_meta.csv",
                                                 "batch_instance.csv"};
  return files;
}

bool alibaba_v2018_required(const std::string& file) { return file == "machine_meta.csv" || file == "batch_task.csv"; }

Result<Trace> parse_alibaba_v2018(const std::map<std::string, std::string>& files, const std::string& dir,
                                  const AlibabaOptions& options) {
  std::map<std::string, std::istringstream> streams;
  std::map<std::string, std::istream*> in;
  for (const auto& [name, text] : files) in[name] = &streams.emplace(name, std::istringstream(text)).first->second;
  return parse_alibaba_v2018(in, dir, options);
}

Result<Trace> parse_alibaba_v2018(const std::map<std::string, std::istream*>& files, const std::string& dir,
                                  const AlibabaOptions& scale) {
  Trace trace;
  trace.format = "alibaba-v2018";
  Diagnostics errors;
  ParseCtx c{dir, scale, trace, errors};
  for (const auto& f : alibaba_v2018_files())
    if (alibaba_v2018_required(f) && !files.contains(f))
      errors.push_back(Diagnostic{{c.path(f), 0, 0}, "", fmt::format("the trace has no {}", f),
                                  "an Alibaba cluster-trace-v2018 directory holds machine_meta.csv and batch_task.csv "
                                  "(container_meta.csv and batch_instance.csv are optional)"});
  if (!errors.empty()) return fail(errors);
  read_machines(c, *files.at("machine_meta.csv"));
  read_batch_tasks(c, *files.at("batch_task.csv"));
  if (auto it = files.find("container_meta.csv"); it != files.end()) read_containers(c, *it->second);
  if (auto it = files.find("batch_instance.csv"); it != files.end()) read_batch_usage(c, *it->second);
  for (const auto& [name, stream] : files)
    if (stream->bad())
      errors.push_back(Diagnostic{{c.path(name), 0, 0}, "", "the file could not be read to its end", "check the disk and the file"});
  if (!errors.empty()) return fail(errors);
  if (trace.machine_events.empty())
    return fail(Diagnostic{{c.path("machine_meta.csv"), 0, 0}, "", "the trace has no usable machine rows",
                           "each row needs a time_stamp, cpu_num and mem_size"});

  // A job's task names are unique (schema.md); a repeated row would double its work.
  std::map<std::pair<std::string, std::string>, size_t> seen;
  std::vector<TraceTask> unique;
  for (auto& t : trace.tasks) {
    if (!seen.emplace(std::pair{t.job, t.name}, unique.size()).second) {
      ++trace.skipped["batch_task.csv: repeated task (first row kept)"];
      continue;
    }
    unique.push_back(std::move(t));
  }
  trace.tasks = std::move(unique);
  link_dags(trace);
  std::stable_sort(trace.machine_events.begin(), trace.machine_events.end(),
                   [](const auto& a, const auto& b) { return std::tie(a.time_s, a.machine) < std::tie(b.time_s, b.machine); });
  std::stable_sort(trace.tasks.begin(), trace.tasks.end(), [](const auto& a, const auto& b) {
    return std::tie(a.start_s, a.job, a.name) < std::tie(b.start_s, b.job, b.name);
  });
  return trace;
}

}  // namespace gaia::sim
