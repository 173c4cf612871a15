#include "launcher/process/line_dedup.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace accel::launcher {

std::string RankSetPrefix(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.size() == 1) return absl::StrCat("[rank ", ranks[0], "] ");
  std::string out = "[ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i != 0) out += ",";
    absl::StrAppend(&out, ranks[i]);
    if (j > i) absl::StrAppend(&out, "-", ranks[j]);
    i = j + 1;
  }
  return out + "] ";
}

bool LineDedup::InTraceback(int rank, absl::string_view line) {
  Traceback& state = traceback_[rank];
  const bool chained = absl::StartsWith(line, "During handling of the above exception") ||
                       absl::StartsWith(line, "The above exception was the direct cause");
  if (absl::StartsWith(line, "Traceback (most recent call last):") ||
      (state != Traceback::kNone && chained)) {
    state = Traceback::kInside;
    return true;
  }
  if (state == Traceback::kInside) {
    // The first line that is not indented is the exception's and ends the traceback.
    if (!line.empty() && line[0] != ' ' && line[0] != '\t') state = Traceback::kAfter;
    return true;
  }
  if (state == Traceback::kAfter && line.empty()) return true;  // a chained one may follow
  state = Traceback::kNone;
  return false;
}

void LineDedup::Add(int rank, absl::string_view line, absl::Time now, std::string* out) {
  const bool traceback = InTraceback(rank, line);
  auto mine = last_.find(rank);
  const std::uint64_t after = mine == last_.end() ? 0 : mine->second->key;
  if (!traceback) {
    auto it = by_text_.find(line);
    if (it != by_text_.end()) {
      Iter best = held_.end();
      for (Iter candidate : it->second) {
        if (candidate->key > after && (best == held_.end() || candidate->key < best->key)) {
          best = candidate;
        }
      }
      if (best != held_.end()) {
        best->ranks.push_back(rank);
        last_[rank] = best;
        FlushDue(now, out);
        return;
      }
    }
  }
  last_[rank] = Hold(rank, line, now, !traceback);
  FlushDue(now, out);
}

LineDedup::Iter LineDedup::Hold(int rank, absl::string_view line, absl::Time now, bool joinable) {
  constexpr std::uint64_t kGap = std::uint64_t{1} << 20;
  auto mine = last_.find(rank);
  const Iter where = mine == last_.end() ? held_.begin() : std::next(mine->second);
  std::uint64_t before = where == held_.begin() ? 0 : std::prev(where)->key;
  std::uint64_t next = where == held_.end() ? before + 2 * kGap : where->key;
  if (next - before < 2) {
    Rekey();
    before = where == held_.begin() ? 0 : std::prev(where)->key;
    next = where == held_.end() ? before + 2 * kGap : where->key;
  }
  const Iter held = held_.insert(
      where,
      Held{std::string(line), {rank}, now + window_, joinable, before + (next - before) / 2});
  dues_.insert(held->due);
  held_bytes_ += line.size() + 64;  // the text and the entry's own bookkeeping
  if (joinable) by_text_[held->text].push_back(held);
  return held;
}

void LineDedup::Rekey() {
  std::uint64_t key = 0;
  for (Held& held : held_) held.key = key += std::uint64_t{1} << 20;
}

void LineDedup::FlushDue(absl::Time now, std::string* out) {
  while (!held_.empty()) {
    const Held& front = held_.front();
    const bool complete =
        !front.joinable || static_cast<int>(front.ranks.size()) >= std::max(rank_count_, 1);
    if (!complete && *dues_.begin() > now && held_bytes_ <= max_held_bytes_) return;
    Emit(out);
  }
}

void LineDedup::FlushAll(std::string* out) {
  while (!held_.empty()) Emit(out);
}

absl::Time LineDedup::NextDue() const {
  return dues_.empty() ? absl::InfiniteFuture() : *dues_.begin();
}

void LineDedup::Emit(std::string* out) {
  const Iter front = held_.begin();
  absl::StrAppend(out, RankSetPrefix(front->ranks), front->text, "\n");
  if (front->joinable) {
    auto it = by_text_.find(front->text);
    if (it != by_text_.end()) {
      std::vector<Iter>& same = it->second;
      same.erase(std::find(same.begin(), same.end(), front));
      if (same.empty()) by_text_.erase(it);
    }
  }
  for (int rank : front->ranks) {
    auto mine = last_.find(rank);
    if (mine != last_.end() && mine->second == front) last_.erase(mine);
  }
  dues_.erase(dues_.find(front->due));
  held_bytes_ -= front->text.size() + 64;
  held_.pop_front();
}

}  // namespace accel::launcher
