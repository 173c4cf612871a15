// The Gloo probe: this file is the one adapter for Gloo in accel-preflight; gloo's exceptions are
// caught here and returned as errors.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "launcher/preflight/probe.h"

namespace accel::launcher {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunkBytes = std::size_t{1} << 20;
constexpr int kRttRounds = 20;
constexpr std::int64_t kMaxChunks = 256;
constexpr int kStreams = 3;
constexpr double kLongAllReduceSeconds = 1.0;

// gloo::rendezvous::Store over the rendezvous store (Context::connectFullMesh swaps addresses).
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(rendezvous::Store& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    Check(store_.Set(key, std::string(data.begin(), data.end())));
  }
  std::vector<char> get(const std::string& key) override {
    absl::StatusOr<std::string> value = store_.Get(key, absl::FromChrono(timeout_));
    Check(value.status());
    return std::vector<char>(value->begin(), value->end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    Check(store_.Wait(keys, absl::FromChrono(timeout)));
  }

 private:
  static void Check(const absl::Status& status) {
    if (!status.ok()) throw std::runtime_error(std::string(status.message()));
  }
  rendezvous::Store& store_;
  std::chrono::milliseconds timeout_;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

void Wait(gloo::transport::UnboundBuffer& buffer, bool send, std::chrono::milliseconds timeout) {
  const bool done = send ? buffer.waitSend(timeout) : buffer.waitRecv(timeout);
  if (!done) throw std::runtime_error(send ? "send aborted" : "receive aborted");
}

// One link's two ends: `sender` streams to `peer`, which receives. Slots start at `slot`.
class LinkTest {
 public:
  LinkTest(gloo::Context& context, int peer, bool sender, std::uint64_t slot,
           const ProbeOptions& options)
      : context_(context),
        peer_(peer),
        sender_(sender),
        slot_(slot),
        timeout_(absl::ToChronoMilliseconds(options.timeout)),
        budget_(absl::ToDoubleSeconds(options.link_budget)) {}

  // Returns the median round trip of a one-byte message (sender; 0 on the receiver).
  double RoundTrip() {
    char byte = 0;
    auto buffer = context_.createUnboundBuffer(&byte, 1);
    std::vector<double> rtts;
    for (int i = 0; i < kRttRounds; ++i) {
      const auto start = Clock::now();
      if (sender_) {
        buffer->send(peer_, slot_);
        Wait(*buffer, true, timeout_);
        buffer->recv(peer_, slot_ + 1);
        Wait(*buffer, false, timeout_);
        rtts.push_back(Seconds(Clock::now() - start));
      } else {
        buffer->recv(peer_, slot_);
        Wait(*buffer, false, timeout_);
        buffer->send(peer_, slot_ + 1);
        Wait(*buffer, true, timeout_);
      }
    }
    if (rtts.empty()) return 0;
    std::sort(rtts.begin(), rtts.end());
    return rtts[rtts.size() / 2];
  }

  // Returns bytes per second from sender to peer (sender; 0 on the receiver): one chunk to size
  // the stream, then kStreams streams of as many chunks as fit the budget, each timed until the
  // receiver acknowledges; the fastest counts.
  double Bandwidth() {
    std::vector<char> chunk(kChunkBytes, 1);
    auto data = context_.createUnboundBuffer(chunk.data(), chunk.size());
    std::int64_t count = 1;
    auto count_buffer = context_.createUnboundBuffer(&count, sizeof(count));
    char ack = 0;
    auto ack_buffer = context_.createUnboundBuffer(&ack, 1);
    const std::uint64_t slot = slot_ + 2;
    const double probe_s = Stream(*data, *ack_buffer, 1, slot);
    if (sender_) {
      count = std::clamp<std::int64_t>(static_cast<std::int64_t>(budget_ / probe_s), 2, kMaxChunks);
      count_buffer->send(peer_, slot + 2);
      Wait(*count_buffer, true, timeout_);
    } else {
      count_buffer->recv(peer_, slot + 2);
      Wait(*count_buffer, false, timeout_);
    }
    // The fastest of a few streams: on a shared host, noise only ever makes a stream slower.
    double fastest_s = 0;
    for (int i = 0; i < kStreams; ++i) {
      const double stream_s = Stream(*data, *ack_buffer, count, slot + 3 + 20 * i);
      fastest_s = i == 0 ? stream_s : std::min(fastest_s, stream_s);
    }
    return sender_ ? static_cast<double>(count) * kChunkBytes / fastest_s : 0;
  }

 private:
  // Streams `count` chunks and waits for the acknowledgement; returns the seconds it took.
  double Stream(gloo::transport::UnboundBuffer& data, gloo::transport::UnboundBuffer& ack,
                std::int64_t count, std::uint64_t slot) {
    const auto start = Clock::now();
    for (std::int64_t i = 0; i < count; ++i) {
      sender_ ? data.send(peer_, slot) : data.recv(peer_, slot);
    }
    for (std::int64_t i = 0; i < count; ++i) Wait(data, sender_, timeout_);
    sender_ ? ack.recv(peer_, slot + 10) : ack.send(peer_, slot + 10);
    Wait(ack, !sender_, timeout_);
    return std::max(1e-9, Seconds(Clock::now() - start));
  }

  gloo::Context& context_;
  const int peer_;
  const bool sender_;
  const std::uint64_t slot_;
  const std::chrono::milliseconds timeout_;
  const double budget_;
};

void Barrier(const std::shared_ptr<gloo::Context>& context, std::uint32_t tag,
             std::chrono::milliseconds timeout) {
  gloo::BarrierOptions opts(context);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::barrier(opts);
}

// Runs one all-reduce of `values` (`reduce`: gloo::sum or gloo::max); returns its seconds.
double TimedAllReduce(const std::shared_ptr<gloo::Context>& context, std::vector<float>& values,
                      void (*reduce)(void*, const void*, const void*, size_t), std::uint32_t tag,
                      std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(values.data(), values.size());
  opts.setReduceFunction(reduce);
  opts.setTag(tag);
  opts.setTimeout(timeout);
  const auto start = Clock::now();
  gloo::allreduce(opts);
  return Seconds(Clock::now() - start);
}

// One warm-up, then three timed all-reduces of the bucket (the median counts). When the warm-up
// took kLongAllReduceSeconds or more on some rank, it is the measure: at that length first-use
// costs and noise are a small part of it, and three more rounds only lengthen the start-up (a
// 25 MiB bucket over a 40 Mbit/s link takes 5.5 s a round: 22 s of preflight where 5.5 s tell
// the same). Every rank learns the slowest warm-up through a one-value all-reduce, so all of
// them run the same rounds.
double AllReduceSeconds(const std::shared_ptr<gloo::Context>& context, std::int64_t bytes,
                        std::chrono::milliseconds timeout) {
  using Reduce = void (*)(void*, const void*, const void*, size_t);
  const auto sum = static_cast<Reduce>(&gloo::sum<float>);
  std::vector<float> values(static_cast<std::size_t>(std::max<std::int64_t>(bytes / 4, 1)), 1.0f);
  const double warm_up = TimedAllReduce(context, values, sum, 900000, timeout);
  std::vector<float> slowest = {static_cast<float>(warm_up)};
  TimedAllReduce(context, slowest, static_cast<Reduce>(&gloo::max<float>), 900010, timeout);
  if (slowest[0] >= kLongAllReduceSeconds) return warm_up;
  std::vector<double> times;
  for (int i = 1; i <= 3; ++i) {
    times.push_back(
        TimedAllReduce(context, values, sum, static_cast<std::uint32_t>(900000 + i), timeout));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

absl::StatusOr<ProbeResult> RunGlooProbe(rendezvous::Store& store, const ProbeOptions& options) {
  const auto timeout = absl::ToChronoMilliseconds(options.timeout);
  try {
    StoreAdapter adapter(store, timeout);
    gloo::transport::tcp::attr attr;
    attr.hostname = options.address;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world);
    context->setTimeout(timeout);
    context->connectFullMesh(adapter, device);
    ProbeResult result;
    std::uint64_t slot = 1000;
    std::uint32_t tag = 1;
    for (const auto& [from, to] : LinkOrder(options.world)) {
      if (options.rank == from || options.rank == to) {
        const bool sender = options.rank == from;
        LinkTest link(*context, sender ? to : from, sender, slot, options);
        const double rtt = link.RoundTrip();
        const double bandwidth = link.Bandwidth();
        if (sender) result.outgoing.push_back(LinkMeasure{from, to, bandwidth, rtt});
      }
      slot += 100;
      Barrier(context, tag++, timeout);
    }
    result.allreduce_s = AllReduceSeconds(context, options.bucket_bytes, timeout);
    return result;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("gloo: ", e.what()));
  }
}

}  // namespace accel::launcher
