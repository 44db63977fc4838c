#include "lib/kept_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iterator>

#include "lib/binary_io.hpp"
#include "lib/huge_pages.hpp"

namespace gaia {

namespace {

// A file's frame: its magic, format and layout, revision, fingerprint, history hash,
// and the payload's size and checksum.
constexpr size_t k_magic_size = 8;
constexpr size_t k_head_size = k_magic_size + 4 + 4 + 8 + 8 + 8 + 8 + 8;

// Changes at each end of a file's revision its fingerprint covers.
constexpr size_t k_fingerprint_changes = 16;

// A fingerprint of the changes one revision made (kinds, keys, values, revisions).
uint64_t changes_fingerprint(std::span<const Event> changes) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  auto add = [&](std::string_view s) {
    uint64_t n = s.size();
    XXH3_64bits_update(state, &n, sizeof n);
    XXH3_64bits_update(state, s.data(), s.size());
  };
  for (const auto& e : changes) {
    add(e.type == EventType::Put ? "put" : "delete");
    add(e.kv.key);
    add(e.kv.value);
    int64_t rev[2] = {e.kv.mod_revision, e.kv.create_revision};
    XXH3_64bits_update(state, rev, sizeof rev);
  }
  uint64_t out = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return out;
}

std::optional<uint64_t> fingerprint_at(Store& store, int64_t revision) {
  if (revision <= 0) return std::nullopt;
  // The first and last few changes of the revision, and cheap after a commit of 50,000
  // keys, whose whole revision took 400 ms to read for every command.
  auto changes = store.changes_at(revision, k_fingerprint_changes);
  if (!changes || changes->empty()) return std::nullopt;
  return changes_fingerprint(*changes);
}

}  // namespace

std::optional<KeptFileHead> kept_head(Store& store, int64_t revision) {
  auto mark = store.history_mark(revision);
  if (!mark || !*mark || (*mark)->revision != revision) return std::nullopt;
  auto fingerprint = fingerprint_at(store, revision);
  if (!fingerprint) return std::nullopt;
  return KeptFileHead{revision, *fingerprint, (*mark)->hash};
}

StoreResult<KeptChanges::Read> KeptChanges::read(Store& store, int64_t after, int64_t upto, std::string_view skipped) {
  // Held while reading: a second reader waits for this read rather than start its own.
  std::lock_guard lock(m_mutex);
  if (m_read && m_upto == upto && m_after <= after && (m_skipped.empty() || m_skipped == skipped)) {
    ++m_reused;
    auto from = std::find_if(m_read->begin(), m_read->end(), [&](const Event& e) { return e.revision() > after; });
    return Read{m_read, static_cast<size_t>(from - m_read->begin()), {}};
  }
  auto changes = skipped.empty() ? store.changes_since(after + 1, "") : store.changes_since_skipping(after + 1, skipped);
  if (!changes) return std::unexpected(changes.error());
  // What was written after `upto` is left for the next refresh.
  auto past = std::find_if(changes->begin(), changes->end(), [&](const Event& e) { return e.revision() > upto; });
  changes->erase(past, changes->end());
  if (m_readers <= 1 || m_read) return Read{nullptr, 0, std::move(*changes)};
  m_read = std::make_shared<const std::vector<Event>>(std::move(*changes));
  m_after = after;
  m_upto = upto;
  m_skipped = skipped;
  return Read{m_read, 0, {}};
}

void KeptChanges::done() {
  std::lock_guard lock(m_mutex);
  if (--m_readers <= 0) m_read.reset();
}

void KeptChanges::store_at(int64_t revision) {
  std::lock_guard lock(m_mutex);
  if (m_read && revision > m_upto) m_read.reset();
}

void KeptChanges::writing(int64_t revision) {
  std::lock_guard lock(m_mutex);
  m_writing = revision;
}

bool KeptChanges::follow(int64_t file_revision, int64_t revision) const {
  std::lock_guard lock(m_mutex);
  return file_revision < revision && m_writing == revision;
}

bool kept_file_due(const ChangesAfter& after, const KeptChanges* shared) {
  return after.changes.size() > k_kept_rewrite_after || after.read > k_kept_reread_after ||
         (shared && shared->follow(after.file_revision, after.head.revision));
}

int KeptChanges::reused() const {
  std::lock_guard lock(m_mutex);
  return m_reused;
}

namespace {

std::string history_differs(int64_t file_revision) {
  return fmt::format("the store's history since revision {} is not the one the file was read from "
                     "(a copy of the store that went its own way, or one restored)",
                     file_revision);
}

}  // namespace

std::expected<ChangesAfter, std::string> changes_after(Store& store, const KeptFileHead& file,
                                                       std::span<const std::string_view> prefixes,
                                                       KeptChanges* shared) {
  auto mark = store.history_mark();
  if (!mark) return std::unexpected(fmt::format("reading the store's history hash failed: {}", mark.error().message));
  if (!*mark) return std::unexpected(std::string("the store keeps no history hash"));
  const HistoryMark now = **mark;
  if (now.revision < file.revision)
    return std::unexpected(fmt::format("the store is at revision {}, behind the file's {} (re-created or restored)",
                                       now.revision, file.revision));
  if (now.revision - file.revision > k_kept_max_revisions)
    return std::unexpected(fmt::format("it is {} revisions behind the store (more than {})",
                                       now.revision - file.revision, k_kept_max_revisions));
  if (fingerprint_at(store, file.revision) != file.fingerprint)
    return std::unexpected(fmt::format("the store's commit at the file's revision {} is another one (re-created, "
                                       "restored, or its history compacted)",
                                       file.revision));
  ChangesAfter out;
  out.head = file;
  out.file_revision = file.revision;
  // A file among the store's last revisions is checked against the store's own history
  // hash at the file's revision, which the commits since left in the store's ring of
  // them (Store::history_mark): the hash need not be chained over every change since,
  // so the changes of keys no kept file holds, the timeline's events (more than half of
  // what a submit writes), are not read at all. An older file is checked by chaining.
  const bool skips = std::none_of(prefixes.begin(), prefixes.end(), [](std::string_view p) {
    return p.starts_with(k_timeline_prefix) || k_timeline_prefix.starts_with(p);
  });
  bool ringed = false;
  if (skips && now.revision > file.revision && now.revision - file.revision < Store::k_history_kept) {
    auto then = store.history_mark(file.revision);
    if (!then) return std::unexpected(fmt::format("reading the store's history hash failed: {}", then.error().message));
    if (*then && (*then)->revision == file.revision) {
      if ((*then)->hash != file.history) return std::unexpected(history_differs(file.revision));
      // Every commit since must have chained the hash on, or the hash now is not the
      // store's history (an older gaia wrote to it): then the chain below tells.
      auto chained = store.history_chained(file.revision, now.revision);
      if (!chained)
        return std::unexpected(fmt::format("reading the store's history hashes failed: {}", chained.error().message));
      ringed = *chained;
    }
  }
  if (now.revision > file.revision) {
    // Every change since (of every key when the history hash is chained over them); one
    // request, as the changes table is read by revision (one per prefix scanned it once
    // each). What was written after the mark was read is left for the next refresh.
    KeptChanges alone;
    auto changes = (shared ? *shared : alone)
                       .read(store, file.revision, now.revision, ringed ? k_timeline_prefix : std::string_view());
    if (!changes)
      return std::unexpected(fmt::format("reading the changes since revision {} failed: {}", file.revision,
                                         changes.error().message));
    std::span<const Event> since = changes->changes();
    // Read whole, a kept read may hold the events a ringed check skips: they count as
    // read, as they were, but the hash is the store's own.
    out.head = KeptFileHead{now.revision, 0, ringed ? now.hash : chain_history(file.history, since)};
    out.read = since.size();
    // Taken from a read of this reader's own, copied from one kept for another.
    auto wanted = [&](const Event& e) {
      return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return e.kv.key.starts_with(p); });
    };
    if (changes->kept) std::copy_if(since.begin(), since.end(), std::back_inserter(out.changes), wanted);
    for (auto& e : changes->own)
      if (wanted(e)) out.changes.push_back(std::move(e));
  }
  // The history since the file is the store's own: the file's history hash chained over
  // it is the store's now.
  if (out.head.history != now.hash) return std::unexpected(history_differs(file.revision));
  if (now.revision > file.revision) {
    auto fingerprint = fingerprint_at(store, now.revision);
    if (!fingerprint) return std::unexpected(fmt::format("reading the store's commit at revision {} failed", now.revision));
    out.head.fingerprint = *fingerprint;
  }
  return out;
}

namespace {


struct Frame {
  KeptFileHead head;
  uint64_t size = 0, hash = 0;
};

std::optional<Frame> read_frame(std::string_view bytes, const KeptFileKind& kind) {
  if (kind.magic.size() != k_magic_size || bytes.size() < k_head_size || !bytes.starts_with(kind.magic))
    return std::nullopt;
  BinaryReader r(bytes.substr(k_magic_size, k_head_size - k_magic_size));
  if (r.u32() != kind.format || r.u32() != kind.layout) return std::nullopt;
  Frame f;
  f.head.revision = r.i64();
  f.head.fingerprint = r.u64();
  f.head.history = r.u64();
  f.size = r.u64();
  f.hash = r.u64();
  return f;
}

}  // namespace

BinaryWriter kept_payload_writer(std::string_view store_id, KeptFileHead head) {
  BinaryWriter w;
  w.str(store_id);
  w.i64(head.revision);
  w.u64(head.fingerprint);
  w.u64(head.history);
  return w;
}

std::string frame_kept_file(const KeptFileKind& kind, KeptFileHead head, std::string payload) {
  BinaryWriter w;
  w.out().append(kind.magic.substr(0, k_magic_size));
  w.u32(kind.format);
  w.u32(kind.layout);
  w.i64(head.revision);
  w.u64(head.fingerprint);
  w.u64(head.history);
  w.u64(payload.size());
  w.u64(XXH3_64bits(payload.data(), payload.size()));
  std::string out = std::move(w.out());
  out += payload;
  return out;
}

std::optional<KeptFileHead> peek_kept_file(std::string_view bytes, const KeptFileKind& kind) {
  auto f = read_frame(bytes, kind);
  if (!f) return std::nullopt;
  return f->head;
}

std::expected<BinaryReader, std::string> kept_payload_reader(std::string_view bytes, const KeptFileKind& kind,
                                                             std::string_view store_id, KeptFileHead* head) {
  auto refuse = [](std::string why) { return std::unexpected(std::move(why)); };
  if (bytes.size() < k_head_size || !bytes.starts_with(kind.magic)) return refuse("not a file of its kind (damaged)");
  auto f = read_frame(bytes, kind);
  if (!f) return refuse("written by another gaia build (another format or layout)");
  std::string_view payload = bytes.substr(k_head_size);
  if (payload.size() != f->size)
    return refuse(fmt::format("damaged: {} bytes where its frame says {}", payload.size(), f->size));
  if (XXH3_64bits(payload.data(), payload.size()) != f->hash) return refuse("damaged: its checksum does not match");
  BinaryReader r(payload);
  if (r.view() != store_id) return refuse("another store's, at this address (a store made again there since)");
  // The frame's revision and fingerprint are outside the checksum: the payload's own
  // copies must agree with them.
  const int64_t revision = r.i64();
  const uint64_t fingerprint = r.u64();
  const uint64_t history = r.u64();
  if (!r.good() || revision != f->head.revision || fingerprint != f->head.fingerprint || history != f->head.history)
    return refuse("damaged: its frame and contents disagree");
  *head = f->head;
  return r;
}

std::optional<std::string> read_kept_file(const std::filesystem::path& path, std::string* why) {
  auto refuse = [&](std::string reason) -> std::optional<std::string> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  // Only a file of this user's own, in a folder of this user's own: a file someone else
  // could have put there is not read.
  struct stat file{}, dir{};
  if (::stat(path.c_str(), &file) != 0) return refuse(errno == ENOENT ? "none yet" : std::strerror(errno));
  if (!S_ISREG(file.st_mode)) return refuse("not read: it is not a plain file");
  if (::stat(path.parent_path().c_str(), &dir) != 0) return refuse(std::strerror(errno));
  if (file.st_uid != ::geteuid() || dir.st_uid != ::geteuid() || (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return refuse("not read: it or its folder is not this user's own, or others may write to the folder");
  // Without blocking, should a pipe have been put there since.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return refuse(fmt::format("it cannot be opened: {}", std::strerror(errno)));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_it{fd};
  struct stat opened{};
  if (::fstat(fd, &opened) != 0) return refuse(fmt::format("it cannot be read: {}", std::strerror(errno)));
  // The file opened, which another of this user's commands may have renamed over the
  // one checked above, is a plain file of this user's own too.
  if (!S_ISREG(opened.st_mode) || opened.st_uid != ::geteuid())
    return refuse("not read: it was replaced since, by something not a plain file of this user's own");
  if (opened.st_size <= 0) return refuse("it is empty");
  // Read straight into the string's room, not into room first filled with zeros: the
  // two files are 20 MB at 50,000 instances.
  std::string out;
  bool whole = false;
  out.resize_and_overwrite(static_cast<size_t>(opened.st_size), [&](char* p, size_t n) {
    advise_huge_pages(p, n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, p + got, n - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    whole = got == n;
    return got;
  });
  if (!whole) return refuse("it cannot be read whole (cut short while it was read)");
  return out;
}

void write_kept_file(const std::filesystem::path& path, const std::string& bytes) {
  static std::atomic<unsigned> counter{0};
  std::error_code ec;
  const auto dir = path.parent_path();
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  // A folder someone else owns is left alone (its files would not be read either).
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || st.st_uid != ::geteuid()) return;
  // The state holds every app's rendered documents: the folder and files are the
  // owner's alone.
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace, ec);
  // A file of this process's own first, renamed over the old one: a reader never sees
  // half a file, and of two writers one's file or the other's is left whole.
  const std::string base = path.filename().string();
  const auto tmp = dir / fmt::format(".{}.{}.{}", base, ::getpid(), counter++);
  // A writer killed before its rename left its own file behind: gone with its process.
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string lead = "." + base + ".";
    if (!name.starts_with(lead)) continue;
    int pid = 0;
    auto [end, err] = std::from_chars(name.data() + lead.size(), name.data() + name.size(), pid);
    if (err == std::errc() && pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      std::filesystem::remove(e.path(), ignored);
    }
  }
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == bytes.size();
  ok = ::close(fd) == 0 && ok;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) std::filesystem::remove(tmp, ec);
}

}  // namespace gaia
