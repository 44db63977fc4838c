#pragma once
// Files that keep what a process read from the store for the next process on the same
// store: the decoded state (lib/state_file.hpp) and the sim backend's world. Such a file
// is only ever a shortcut. It records the revision it was read at, the store's history
// hash there (Store::history_mark: chained over every change up to it) and a
// fingerprint of the changes at that revision; a reader uses it only when the store's
// history hash at the file's revision is the file's: read from the store's ring of its
// last hashes when the file is that recent, otherwise the store's hash now must be the
// file's chained over every change since. A store re-created, restored from a backup, or
// a copy of it that went its own way, has another history, however alike any one
// revision of it is.

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/binary_io.hpp"
#include "lib/store.hpp"

namespace gaia {

// More revisions than this since a file, and a fresh read costs less than replaying
// them.
inline constexpr int64_t k_kept_max_revisions = 20000;
// Changes after a file's revision past which the reader writes the file again. Each
// replayed instance costs about what a full read's decoding of it does, so a file many
// commands behind is brought forward, while one a command or two behind is not written
// again after every command (docs/benchmarks.md, "Round eleven"): more than
// k_kept_rewrite_after changes replayed into what the file holds. Every other change
// since is read too (but the timeline's events, while the store's ring of history hashes
// checks the file), at about a microsecond each, while writing both files costs about
// 45 ms of CPU: more than k_kept_reread_after changes read also bring the file forward,
// so a world file whose copies did not change while thousands of events were written is
// not read further behind with every command (it was), nor written again after every
// second submit (docs/benchmarks.md, "Round twelve").
inline constexpr size_t k_kept_rewrite_after = 4096;
inline constexpr size_t k_kept_reread_after = 16384;

// The keys of the timeline's events (lib/state.hpp keys::event): no kept file holds
// them, nor does the kept state, while they are more than half of what a submit writes.
inline constexpr std::string_view k_timeline_prefix = "events/";


struct KeptFileHead {
  int64_t revision = 0;
  uint64_t fingerprint = 0;  // Of the first and last changes at `revision`.
  uint64_t history = 0;      // The store's history hash at `revision`.
};

// What a file of the store's state at `revision` records of the store; nothing when
// the store is no longer at that revision, keeps no history hash, or has no changes
// there (or no longer has them).
std::optional<KeptFileHead> kept_head(Store& store, int64_t revision);

// The changes under `prefixes` after the file's revision, up to the store's revision
// when asked, in revision order: when the store is the one the file was read from, its
// history then and since included (its history hash at the file's revision, from the
// store's ring, or chained over every change since when that is gone, is the file's;
// the fingerprint of the file's revision matches), and it is at most
// k_kept_max_revisions ahead; why not otherwise. `head` of the result is what a file of
// the state brought forward records.
// `read` is how many changes were read to check the history (of every key but the
// timeline's within the ring, of every key beyond): what using the file costs beyond
// its decoding.
struct ChangesAfter {
  std::vector<Event> changes;
  KeptFileHead head;
  size_t read = 0;
  int64_t file_revision = 0;  // The file's own.
};

// The store's changes after a file's revision, read once for the kept files of one
// process. The state's and the world's loaders each read every change since their file
// (but the timeline's events, when the store's ring of history hashes checks it),
// nearly always from the same revision
// (the two are written together), in the same command, in either order or at once: the
// second finds the first one's read here rather than read the same thousands of changes
// again on the store's one connection. When one loader writes its file again, the other,
// loading after it, writes its own at the same revision (follow), so the files stay
// together. Files at different revisions are not written to bring them together (that
// wrote files after every command, docs/store.md): in one order of loading the second
// reuses the first's read, in the other it reads for itself until its file is due to be
// written anyway. `readers` is how many loaders will come; each
// calls done() once its file is used, refused or missing (a backend without a world
// file counts as done at once), and the last frees the read; so does a store that moved
// past it (store_at). Thread-safe.
class KeptChanges {
 public:
  explicit KeptChanges(int readers = 1) : m_readers(readers) {}
  // Every change of `store` after revision `after` up to `upto`, in order: the read
  // kept, from position `from` on, when it went up to `upto` and began at `after` or
  // before (a file older than this one's); or a read of this reader's own, `own` (which
  // it may take), when none is kept for another.
  struct Read {
    std::shared_ptr<const std::vector<Event>> kept;
    size_t from = 0;
    std::vector<Event> own;
    std::span<const Event> changes() const {
      return kept ? std::span<const Event>(*kept).subspan(from) : std::span<const Event>(own);
    }
  };
  // With `skipped` (a key prefix), the changes of its keys are left out of the read
  // (Store::changes_since_skipping); a kept read serves a request that skips what it
  // skipped, or that it read whole.
  StoreResult<Read> read(Store& store, int64_t after, int64_t upto, std::string_view skipped = {});
  void done();
  // Calls done() on `shared` (if any) when it goes: a loader's every way out.
  struct Done {
    KeptChanges* shared;
    ~Done() {
      if (shared) shared->done();
    }
  };
  // The store is at `revision` now: a read kept up to an earlier one can serve no
  // reader any more (each asks up to the revision it finds), and is freed.
  void store_at(int64_t revision);
  // A reader writes its file again, at `revision`.
  void writing(int64_t revision);
  // Whether a reader whose file is at `file_revision`, and who has read up to
  // `revision`, is to write its file again so the files stay at one revision: another
  // reader writes its file at `revision` now.
  bool follow(int64_t file_revision, int64_t revision) const;
  // Reads served from what was kept (for tests).
  int reused() const;

 private:
  mutable std::mutex m_mutex;
  int m_readers;
  int64_t m_after = -1, m_upto = -1, m_writing = -1;
  std::shared_ptr<const std::vector<Event>> m_read;
  std::string m_skipped;  // What m_read left out ("" for nothing).
  int m_reused = 0;
};

// Otherwise, why not, in words for `-v`. With `shared`, the changes are read through it.
std::expected<ChangesAfter, std::string> changes_after(Store& store, const KeptFileHead& file,
                                                       std::span<const std::string_view> prefixes,
                                                       KeptChanges* shared = nullptr);

// Whether a file used with `after` is to be written again: more than
// k_kept_rewrite_after changes were replayed into it or more than k_kept_reread_after
// read, or another loader sharing `shared` writes its file at the same revision now.
bool kept_file_due(const ChangesAfter& after, const KeptChanges* shared);

// A file's frame: an 8-byte magic naming its kind, the format and layout of its
// payload (a reader of another build refuses them), the revision and fingerprint it was
// read at, and the payload with its length and checksum (a damaged file is refused).
struct KeptFileKind {
  std::string_view magic;  // 8 bytes.
  uint32_t format = 0;
  uint32_t layout = 0;
};
// A writer for a file's payload, begun with what every payload begins with: the store it
// was read from and the head (the copies the checksum covers).
BinaryWriter kept_payload_writer(std::string_view store_id, KeptFileHead head);
// The file: its frame around `payload`.
std::string frame_kept_file(const KeptFileKind& kind, KeptFileHead head, std::string payload);
// The head alone, without checking the payload: to ask the store about the file while
// the payload decodes.
std::optional<KeptFileHead> peek_kept_file(std::string_view bytes, const KeptFileKind& kind);
// A reader of the payload past its beginning, for a whole, undamaged file of this kind,
// format and layout, read from `store_id`, whose payload agrees with its frame; and the
// head. Otherwise why not, in words for `-v`. The reader views `bytes`.
std::expected<BinaryReader, std::string> kept_payload_reader(std::string_view bytes, const KeptFileKind& kind,
                                                             std::string_view store_id, KeptFileHead* head);

// The file's bytes; nothing when it is missing or unreadable, and then why in `why`.
std::optional<std::string> read_kept_file(const std::filesystem::path& path, std::string* why = nullptr);

// Where a process says what became of its kept files: used, refused and why, written
// or not. `gaia -v` prints it, so a user who finds a command slow can tell a refused
// file from a missing one. Called from the threads that read and write the files.
using KeptFileNote = std::function<void(const std::string&)>;
// Why a file whose payload does not decode, though its checksum matches, was refused.
inline constexpr std::string_view k_damaged_kept_file = "damaged: its contents do not decode";
// Writes `bytes` to `path` whole or not at all, readable by its owner only; a failure
// leaves the old file, if any, and is not reported (the file is a shortcut).
void write_kept_file(const std::filesystem::path& path, const std::string& bytes);

}  // namespace gaia
