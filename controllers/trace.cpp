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
    if (line_no == 1 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);  // A UTF-8 byte order mark.
    if (line_no == 1 && (line.starts_with(header) || (header == "instance_name" && line.starts_with("inst_name")))) continue;
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

// A field as a number within [lo, hi] (a whole number when `whole`); nullopt when
// empty (the trace leaves unknown values empty). Anything else sets `bad`: the schema's
// ranges are what a replay can hold (a time of 1e300 seconds, or a machine of 1e300
// cores, would overflow the replay's integers), so a value outside is a malformed row.
std::optional<double> number_field(std::string_view f, bool* bad, double lo, double hi, bool whole = false) {
  if (f.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || p != f.data() + f.size() || !std::isfinite(v) || v < lo || v > hi ||
      (whole && v != std::floor(v))) {
    *bad = true;
    return std::nullopt;
  }
  return v;
}

// The ranges of the schemas' fields, as number_field checks them.
constexpr double kMaxTraceSeconds = 1e9;     // Alibaba's times, in seconds (the trace spans 8 days).
constexpr double kMaxTraceMicros = 1e15;     // Google's, in microseconds (29 days is 2.5e12).
constexpr double kMaxCentiCores = 1e6;       // 10,000 cores, in hundredths.
constexpr double kMaxNormalised = 101;       // Memory normalised to 100 (a rounding above it).

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
    auto t = number_field(f[1], &bad, 0, kMaxTraceSeconds, true), cpu = number_field(f[4], &bad, 0, 1e5, true),
         mem = number_field(f[5], &bad, 0, kMaxNormalised);
    if (bad || f[0].empty()) {
      errs.add(path, line, "machine_id must be set, time_stamp whole seconds 0..1e9, cpu_num a whole number 0..100000 and mem_size 0..100");
      return;
    }
    if (!t || !cpu || !mem || *cpu <= 0 || *mem <= 0) {
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
    auto n = number_field(f[1], &bad, 0, 1e6, true), start = number_field(f[5], &bad, 0, kMaxTraceSeconds, true),
         end = number_field(f[6], &bad, 0, kMaxTraceSeconds, true);
    auto cpu = number_field(f[7], &bad, 0, kMaxCentiCores), mem = number_field(f[8], &bad, 0, kMaxNormalised);
    if (bad || f[0].empty() || f[2].empty()) {
      errs.add(path, line, "task_name and job_name must be set, instance_num a whole number 0..1000000, start_time and "
                           "end_time whole seconds 0..1e9, plan_cpu 0..1000000 (100 is a core) and plan_mem 0..100");
      return;
    }
    if (!n || *n < 1) return c.skip(file, "no instances");
    if (!start || *start == 0) return c.skip(file, "start_time unknown (0)");
    if (!end || *end <= *start) return c.skip(file, "end_time not after start_time");
    if (!cpu || !mem || *cpu <= 0 || *mem <= 0) return c.skip(file, "no plan_cpu or plan_mem");
    if (c.after_until(file, *start)) return;
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
    auto t = number_field(f[2], &bad, 0, kMaxTraceSeconds, true), cpu = number_field(f[5], &bad, 0, kMaxCentiCores),
         mem = number_field(f[7], &bad, 0, kMaxNormalised);
    number_field(f[6], &bad, 0, kMaxCentiCores);
    if (bad || f[0].empty() || f[3].empty()) {
      errs.add(path, line, "container_id and app_du must be set, time_stamp whole seconds 0..1e9, cpu_request and "
                           "cpu_limit 0..1000000 (100 is a core) and mem_size 0..100");
      return;
    }
    if (!t || !cpu || !mem || *cpu <= 0 || *mem <= 0) return c.skip(file, "no time, cpu_request or mem_size");
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
  for (const auto& t : c.trace.tasks) sums[{t.job, t.name}];
  for_each_row(text, "instance_name", [&](const std::vector<std::string_view>& f, int line) {
    ++c.trace.rows;
    if (f.size() != 14) {
      errs.add(path, line, fmt::format("expected 14 fields (instance_name,task_name,job_name,task_type,status,start_time,end_time,machine_id,seq_no,total_seq_no,cpu_avg,cpu_max,mem_avg,mem_max), found {}", f.size()));
      return;
    }
    bool bad = false;
    auto cpu = number_field(f[10], &bad, 0, kMaxCentiCores), mem = number_field(f[12], &bad, 0, kMaxNormalised);
    if (bad) {
      errs.add(path, line, "cpu_avg must be 0..1000000 (100 is a core) and mem_avg 0..100");
      return;
    }
    if (!cpu || !mem) return c.skip(file, "no cpu_avg or mem_avg");
    // Only the tasks replayed: the full file has a row per instance of every task.
    auto kept = sums.find({key_safe(f[2]), key_safe(f[1])});
    if (kept == sums.end()) return c.skip(file, "task not replayed");
    Sum& s = kept->second;
    s.cpu += *cpu;
    s.mem += *mem;
    ++s.n;
  });
  errs.finish(path);
  for (auto& t : c.trace.tasks) {
    auto it = sums.find({t.job, t.name});
    if (it == sums.end() || it->second.n == 0) continue;
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
        ++trace.skipped["batch_task.csv: dependencies on tasks not in the trace (the task is replayed without them)"];
        continue;
      }
      if (it->second != t.name) t.deps.push_back(it->second);
    }
  }
  // Tasks that wait on each other (R1_2 and R2_1), and the tasks after them, could never
  // start: they are left out and counted, found as what a topological order cannot
  // reach (Kahn's algorithm over each job's tasks).
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < trace.tasks.size(); ++i) index[{trace.tasks[i].job, trace.tasks[i].name}] = i;
  std::vector<int> waiting(trace.tasks.size(), 0);
  std::vector<std::vector<size_t>> after(trace.tasks.size());
  std::vector<size_t> ready;
  for (size_t i = 0; i < trace.tasks.size(); ++i) {
    for (const auto& d : trace.tasks[i].deps) {
      after[index.at({trace.tasks[i].job, d})].push_back(i);
      ++waiting[i];
    }
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<bool> reachable(trace.tasks.size(), false);
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    reachable[i] = true;
    for (size_t j : after[i])
      if (--waiting[j] == 0) ready.push_back(j);
  }
  std::vector<TraceTask> kept;
  kept.reserve(trace.tasks.size());
  for (size_t i = 0; i < trace.tasks.size(); ++i) {
    if (reachable[i])
      kept.push_back(std::move(trace.tasks[i]));
    else
      ++trace.skipped["batch_task.csv: in a DAG cycle or after one (never able to start)"];
  }
  trace.tasks = std::move(kept);
}

// What a Google task did, from its events.
struct GoogleTask {
  int64_t submit = -1, schedule = -1, end = -1;
  Resources request;
  int priority = 0;
  bool spread = false;
};

constexpr int64_t kGoogleUs = 1'000'000;

void read_google_machines(const TraceParts& parts, const GoogleOptions& o, Trace& trace, Diagnostics& errors) {
  for (const auto& [path, in] : parts) {
    RowErrors errs(errors);
    std::map<std::string, TraceMachineEvent> last;
    for_each_row(*in, "timestamp", [&](const std::vector<std::string_view>& f, int line) {
      ++trace.rows;
      if (f.size() != 6) {
        errs.add(path, line, fmt::format("expected 6 fields (timestamp,machine ID,event type,platform ID,CPUs,memory), found {}", f.size()));
        return;
      }
      bool bad = false;
      auto t = number_field(f[0], &bad, 0, kMaxTraceMicros, true), type = number_field(f[2], &bad, 0, 2, true),
           cpu = number_field(f[4], &bad, 0, 2), mem = number_field(f[5], &bad, 0, 2);
      if (bad || f[1].empty() || !t || !type) {
        errs.add(path, line, "timestamp (whole microseconds), machine ID and event type (0, 1 or 2) must be set, and "
                             "CPUs and memory must be 0..1 (normalised to the largest machine)");
        return;
      }
      int64_t time = static_cast<int64_t>(*t) / kGoogleUs;
      if (o.until_s > 0 && time > o.until_s) {
        ++trace.skipped["machine_events: after --until"];
        return;
      }
      std::string name = "g" + key_safe(f[1]);
      TraceMachineEvent e = last.contains(name) ? last[name] : TraceMachineEvent{};
      e.time_s = time;
      e.machine = name;
      int kind = static_cast<int>(*type);
      if (kind == 1) {
        e.up = false;  // REMOVE: what ran there is lost.
      } else if (kind == 0 || kind == 2) {
        if (!cpu || !mem || *cpu <= 0 || *mem <= 0) {
          ++trace.skipped["machine_events: no CPUs or memory"];
          return;
        }
        e.up = true;
        e.capacity.cpu_millis = static_cast<int64_t>(std::llround(*cpu * static_cast<double>(o.cores_at_1) * 1000.0));
        e.capacity.memory_bytes = static_cast<int64_t>(std::llround(*mem * static_cast<double>(o.memory_at_1)));
      }
      last[name] = e;
      trace.machine_events.push_back(std::move(e));
    });
    errs.finish(path);
  }
}

void read_google_tasks(const TraceParts& parts, const GoogleOptions& o, Trace& trace, Diagnostics& errors,
                       std::map<std::pair<std::string, int64_t>, GoogleTask>& tasks) {
  for (const auto& [path, in] : parts) {
    RowErrors errs(errors);
    for_each_row(*in, "timestamp", [&](const std::vector<std::string_view>& f, int line) {
      ++trace.rows;
      if (f.size() != 13) {
        errs.add(path, line, fmt::format("expected 13 fields (timestamp,missing info,job ID,task index,machine ID,event type,user,"
                                         "scheduling class,priority,CPU request,memory request,disk space request,"
                                         "different machines restriction), found {}", f.size()));
        return;
      }
      bool bad = false;
      auto t = number_field(f[0], &bad, 0, kMaxTraceMicros, true), index = number_field(f[3], &bad, 0, 1e9, true),
           type = number_field(f[5], &bad, 0, 8, true);
      auto prio = number_field(f[8], &bad, 0, 11, true), cpu = number_field(f[9], &bad, 0, 2),
           mem = number_field(f[10], &bad, 0, 2);
      auto spread = number_field(f[12], &bad, 0, 1, true);
      if (bad || f[2].empty() || !t || !index || !type) {
        errs.add(path, line, "timestamp (whole microseconds), job ID, task index and event type (0..8) must be set, "
                             "priority 0..11, requests 0..1 (normalised) and the restriction 0 or 1");
        return;
      }
      int64_t time = static_cast<int64_t>(*t) / kGoogleUs;
      // Nothing after --until is replayed; a task still running then runs to the end.
      if (o.until_s > 0 && time > o.until_s) {
        ++trace.skipped["task_events: after --until"];
        return;
      }
      GoogleTask& task = tasks[{key_safe(f[2]), static_cast<int64_t>(*index)}];
      switch (static_cast<int>(*type)) {
        case 0:  // SUBMIT
          if (task.submit < 0) task.submit = time;
          if (prio) task.priority = static_cast<int>(*prio);
          if (cpu) task.request.cpu_millis = static_cast<int64_t>(std::llround(*cpu * static_cast<double>(o.cores_at_1) * 1000.0));
          if (mem) task.request.memory_bytes = static_cast<int64_t>(std::llround(*mem * static_cast<double>(o.memory_at_1)));
          task.spread = spread && *spread > 0;
          break;
        case 1:  // SCHEDULE
          task.schedule = time;
          task.end = -1;
          break;
        case 3: case 4: case 5: case 6:  // FAIL, FINISH, KILL, LOST
          if (task.schedule >= 0) task.end = time;
          break;
        default:  // EVICT and the UPDATEs: the replay's own scheduler decides those.
          break;
      }
    });
    errs.finish(path);
  }
}

}  // namespace

Result<Trace> parse_google_2011(const TraceParts& machine_events, const TraceParts& task_events, const GoogleOptions& o) {
  Trace trace;
  trace.format = "google-2011";
  Diagnostics errors;
  if (machine_events.empty() || task_events.empty())
    return fail(Diagnostic{{}, "", "the trace needs machine_events and task_events",
                           "a Google cluster-data-2011-2 directory holds machine_events and task_events (as .csv "
                           "files, or folders of uncompressed part-*.csv files)"});
  read_google_machines(machine_events, o, trace, errors);
  std::map<std::pair<std::string, int64_t>, GoogleTask> tasks;
  read_google_tasks(task_events, o, trace, errors, tasks);
  for (const auto& [path, in] : machine_events)
    if (in->bad()) errors.push_back(Diagnostic{{path, 0, 0}, "", "the file could not be read to its end", "check the disk and the file"});
  for (const auto& [path, in] : task_events)
    if (in->bad()) errors.push_back(Diagnostic{{path, 0, 0}, "", "the file could not be read to its end", "check the disk and the file"});
  if (!errors.empty()) return fail(errors);
  if (trace.machine_events.empty())
    return fail(Diagnostic{{machine_events.front().first, 0, 0}, "", "the trace has no usable machine rows",
                           "each ADD row needs CPUs and memory"});
  // Tasks of a job submitted at the same second with the same request and priority are
  // one role; each keeps its own duration.
  std::map<std::tuple<std::string, int64_t, int64_t, int64_t, int, bool>, size_t> roles;
  std::map<std::string, int> per_job;
  for (const auto& [key, t] : tasks) {
    if (t.submit < 0) {
      ++trace.skipped["task_events: no SUBMIT in the trace"];
      continue;
    }
    if (t.schedule < 0) {
      ++trace.skipped["task_events: never scheduled in the trace"];
      continue;
    }
    if (t.request.cpu_millis <= 0 || t.request.memory_bytes <= 0) {
      ++trace.skipped["task_events: no CPU or memory request"];
      continue;
    }
    // Running at the end of the trace: a service, to the end of the replay.
    int64_t duration = t.end < 0 ? 0 : std::max<int64_t>(1, t.end - t.schedule);
    auto rk = std::tuple{key.first, t.submit, t.request.cpu_millis, t.request.memory_bytes, t.priority, t.spread};
    auto [it, fresh] = roles.emplace(rk, trace.tasks.size());
    if (fresh) {
      TraceTask task;
      task.job = "job" + key.first;
      task.name = fmt::format("tasks{}", per_job[key.first]++);
      task.instances = 0;
      task.start_s = t.submit;
      task.request = t.request;
      task.band = t.priority >= 9 ? Band::Prod : Band::Nonprod;
      task.spread_machines = t.spread;
      trace.tasks.push_back(std::move(task));
    }
    TraceTask& task = trace.tasks[it->second];
    ++task.instances;
    task.durations.push_back(duration);
  }
  std::stable_sort(trace.machine_events.begin(), trace.machine_events.end(),
                   [](const auto& a, const auto& b) { return std::tie(a.time_s, a.machine) < std::tie(b.time_s, b.machine); });
  std::stable_sort(trace.tasks.begin(), trace.tasks.end(), [](const auto& a, const auto& b) {
    return std::tie(a.start_s, a.job, a.name) < std::tie(b.start_s, b.job, b.name);
  });
  return trace;
}

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
