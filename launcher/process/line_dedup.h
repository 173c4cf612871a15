// LineDedup: identical console lines from several ranks are printed once, with the set of ranks
// ("[ranks 0-7] warning: ..."), instead of once per rank.
//
// A line is held for at most `window` after the first rank printed it; a rank that prints the
// same text meanwhile joins it. Held lines are printed in queue order: the first one goes out
// when every rank of the console has joined it or when any held line's window has ended, so no
// line waits longer than `window`. Each rank's lines keep their order: a rank joins only a held
// line queued after its own last one, and a line it starts is queued right after its own last one
// (or first, when it has none held), which leaves its next lines the most held lines to join
// ("W, own, W" from every rank arriving rank by rank still merges both W). Python tracebacks
// (from "Traceback (most recent call last):" through the exception line) never merge: they pass
// whole, in order, under their own rank. Memory is bounded: past max_held_bytes the first held
// line is printed at once. Not thread-safe; pure logic (the caller passes the time), so tests
// drive it directly.
#ifndef ACCEL_LAUNCHER_PROCESS_LINE_DEDUP_H_
#define ACCEL_LAUNCHER_PROCESS_LINE_DEDUP_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace accel::launcher {

// "[rank 3] " or "[ranks 0-3,5,7-9] " (ranks need not be sorted or unique).
std::string RankSetPrefix(std::vector<int> ranks);

class LineDedup {
 public:
  explicit LineDedup(absl::Duration window, std::size_t max_held_bytes = std::size_t{4} << 20)
      : window_(window), max_held_bytes_(max_held_bytes) {}

  // The number of ranks whose lines come here: a line all of them printed is complete.
  void SetRankCount(int count) { rank_count_ = count; }

  // Takes one line of `rank` (without its newline); appends to *out every line now due, each
  // prefixed and ending in '\n'.
  void Add(int rank, absl::string_view line, absl::Time now, std::string* out);
  // Appends the lines whose window ended by `now`.
  void FlushDue(absl::Time now, std::string* out);
  // Appends every held line (end of the attempt, a renumbering).
  void FlushAll(std::string* out);
  // When the oldest held line is due; InfiniteFuture when none is held.
  absl::Time NextDue() const;
  bool empty() const { return held_.empty(); }

 private:
  struct Held {
    std::string text;
    std::vector<int> ranks;
    absl::Time due;
    bool joinable = true;
    std::uint64_t key = 0;  // increases along the queue
  };
  using Iter = std::list<Held>::iterator;

  Iter Hold(int rank, absl::string_view line, absl::Time now, bool joinable);
  bool InTraceback(int rank, absl::string_view line);
  void Emit(std::string* out);  // prints and drops the first held line
  void Rekey();                 // spreads the keys out again when two neighbours touch

  absl::Duration window_;
  std::size_t max_held_bytes_;
  int rank_count_ = 0;
  std::list<Held> held_;            // the queue, printed front first
  std::multiset<absl::Time> dues_;  // every held line's due time
  std::size_t held_bytes_ = 0;
  absl::flat_hash_map<std::string, std::vector<Iter>> by_text_;  // joinable held lines
  std::map<int, Iter> last_;  // rank → its last held line (none held: absent)
  enum class Traceback { kNone, kInside, kAfter };  // kAfter: its exception line was printed
  std::map<int, Traceback> traceback_;              // by rank
};

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_LINE_DEDUP_H_
