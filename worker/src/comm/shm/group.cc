#include "worker/src/comm/shm/group.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "accel/error.h"
#include "worker/src/comm/shm/reduce.h"

namespace accel::worker::shm {
namespace {

std::string Subject(int local_rank, int ranks) {
  return "(shm local rank " + std::to_string(local_rank) + " of " + std::to_string(ranks) + ")";
}

// "<pid>:<fd>:<nonce>:<bytes>"
struct Location {
  long pid = 0;
  int fd = -1;
  std::uint64_t nonce = 0;
  std::size_t bytes = 0;
};

std::string Format(const Location& l) {
  return std::to_string(l.pid) + ":" + std::to_string(l.fd) + ":" + std::to_string(l.nonce) + ":" +
         std::to_string(l.bytes);
}

Location Parse(const std::string& text, const std::string& subject) {
  Location l;
  char sep[3] = {};
  std::istringstream in(text);
  in >> l.pid >> sep[0] >> l.fd >> sep[1] >> l.nonce >> sep[2] >> l.bytes;
  if (!in || sep[0] != ':' || sep[1] != ':' || sep[2] != ':' || l.pid <= 0 || l.fd < 0) {
    throw Error("connect shm", subject, "malformed segment location \"" + text + "\"");
  }
  return l;
}

}  // namespace

ShmGroup::ShmGroup(ShmSegment segment, int local_rank, int ranks)
    : segment_(std::move(segment)),
      local_rank_(local_rank),
      ranks_(ranks),
      sync_(segment_, local_rank, ranks) {}

std::unique_ptr<ShmGroup> ShmGroup::Connect(Kv& kv, const std::string& key, int local_rank,
                                            int ranks, int global_rank, std::size_t slot_bytes,
                                            std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string subject = Subject(local_rank, ranks);
  std::unique_ptr<ShmGroup> group;
  if (local_rank == 0) {
    Location l;
    l.bytes = SegmentBytes(ranks, slot_bytes);
    ShmSegment segment = ShmSegment::Create(l.bytes);
    l.pid = ::getpid();
    l.fd = segment.fd();
    l.nonce = std::random_device{}() * 0x100000001ULL + std::random_device{}();
    Header* h = segment.header();
    h->nonce = l.nonce;
    h->ranks = static_cast<std::uint32_t>(ranks);
    h->slot_bytes = static_cast<std::uint32_t>(slot_bytes);
    h->magic = kMagic;
    group.reset(new ShmGroup(std::move(segment), local_rank, ranks));
    kv.Set(key, Format(l));
  } else {
    const Location l = Parse(kv.Get(key, timeout), subject);
    ShmSegment segment = ShmSegment::Open(static_cast<pid_t>(l.pid), l.fd, l.bytes);
    const Header* h = segment.header();
    if (h->magic != kMagic || h->nonce != l.nonce ||
        h->ranks != static_cast<std::uint32_t>(ranks)) {
      throw Error("connect shm", subject, "the segment at " + Format(l) + " is not this group's");
    }
    group.reset(new ShmGroup(std::move(segment), local_rank, ranks));
  }
  RankCtrl* me = group->segment_.ctrl(local_rank);
  me->pid.store(::getpid());
  me->global_rank.store(global_rank);
  Header* h = group->segment_.header();
  h->attached.fetch_add(1, std::memory_order_seq_cst);
  group->sync_.WakeSleepers();
  group->sync_.WaitCounter(h->attached, static_cast<std::uint32_t>(ranks), "connect shm", deadline);
  group->sync_.WatchPeers();
  group->segment_.CloseFd();  // everyone has it mapped: nothing can reach it by name any more
  return group;
}

void ShmGroup::Barrier(Clock::time_point deadline) { sync_.Barrier("barrier", deadline); }

void ShmGroup::AllReduce(void* data, c10::ScalarType dtype, std::int64_t count, ReduceOp op,
                         int divisor, Clock::time_point deadline) {
  const auto elem = static_cast<std::int64_t>(c10::elementSize(dtype));
  const std::int64_t slot_elems = segment_.header()->slot_bytes / elem;
  const std::int64_t align = std::max<std::int64_t>(1, 64 / elem);
  auto* bytes = static_cast<std::uint8_t*>(data);
  std::vector<const void*> inputs(static_cast<std::size_t>(ranks_));
  ShmSync::Signature signature;
  signature.kind = ShmSync::Signature::kAllReduce;
  signature.dtype = static_cast<std::uint8_t>(dtype);
  signature.op = static_cast<std::uint8_t>(op);
  signature.count = static_cast<std::uint64_t>(count);
  for (std::int64_t c0 = 0; c0 < count; c0 += slot_elems) {
    const std::int64_t n = std::min(slot_elems, count - c0);
    const int b = static_cast<int>(chunk_++ & 1);
    const std::int64_t per = ((n + ranks_ - 1) / ranks_ + align - 1) / align * align;
    auto begin = [&](int s) { return std::min(n, s * per); };
    auto length = [&](int s) { return std::min(n, (s + 1) * per) - begin(s); };
    std::uint8_t* base = bytes + c0 * elem;
    std::uint8_t* mine = segment_.slot(b, local_rank_);
    for (int s = 0; s < ranks_; ++s) {
      if (s != local_rank_ && length(s) > 0) {
        std::memcpy(mine + begin(s) * elem, base + begin(s) * elem, length(s) * elem);
      }
    }
    sync_.Barrier("all-reduce", deadline, signature);
    const std::int64_t off = begin(local_rank_) * elem;
    if (length(local_rank_) > 0) {
      for (int k = 0; k < ranks_; ++k) {
        inputs[k] = k == local_rank_ ? base + off : segment_.slot(b, k) + off;
      }
      Reduce(dtype, op, inputs, base + off, mine + off, length(local_rank_), divisor);
    }
    sync_.Barrier("all-reduce", deadline, signature);
    for (int s = 0; s < ranks_; ++s) {
      if (s != local_rank_ && length(s) > 0) {
        std::memcpy(base + begin(s) * elem, segment_.slot(b, s) + begin(s) * elem,
                    length(s) * elem);
      }
    }
  }
}

void ShmGroup::Broadcast(void* data, std::size_t bytes, int root, Clock::time_point deadline) {
  const std::size_t slot = segment_.header()->slot_bytes;
  auto* p = static_cast<std::uint8_t*>(data);
  ShmSync::Signature signature;
  signature.kind = ShmSync::Signature::kBroadcast;
  signature.root = static_cast<std::uint16_t>(root);
  signature.count = bytes;
  for (std::size_t off = 0; off < bytes; off += slot) {
    const std::size_t n = std::min(slot, bytes - off);
    const int b = static_cast<int>(chunk_++ & 1);
    if (local_rank_ == root) std::memcpy(segment_.slot(b, root), p + off, n);
    sync_.Barrier("broadcast", deadline, signature);
    if (local_rank_ != root) std::memcpy(p + off, segment_.slot(b, root), n);
  }
}

}  // namespace accel::worker::shm
