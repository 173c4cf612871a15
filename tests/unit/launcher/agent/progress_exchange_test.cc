// Unit tests of the progress exchange's job verdict (issue 25): machines are ProgressExchange
// instances sharing one in-memory store (the rendezvous server's), each through its own view that
// may answer slowly (a starved launcher), so one machine's copy of another's ranks can be stale
// when it finds the job hung.
#include "launcher/agent/progress_exchange.h"

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rendezvous/store/in_memory_store.h"
#include "rendezvous/store/prefix_store.h"

namespace accel::launcher {
namespace {

using ::testing::HasSubstr;

// A view of the shared store whose every call first waits `delay`.
class SlowStore : public rendezvous::Store {
 public:
  SlowStore(rendezvous::Store& base, absl::Duration delay) : view_("attempt0/", base), d_(delay) {}
  absl::Status Set(std::string_view key, std::string_view value) override {
    absl::SleepFor(d_);
    return view_.Set(key, value);
  }
  absl::StatusOr<std::string> Get(std::string_view key, absl::Duration timeout) override {
    absl::SleepFor(d_);
    return view_.Get(key, timeout);
  }
  absl::StatusOr<std::int64_t> Add(std::string_view key, std::int64_t delta) override {
    absl::SleepFor(d_);
    return view_.Add(key, delta);
  }
  absl::Status Wait(const std::vector<std::string>& keys, absl::Duration timeout) override {
    absl::SleepFor(d_);
    return view_.Wait(keys, timeout);
  }
  absl::StatusOr<bool> Delete(std::string_view key) override {
    absl::SleepFor(d_);
    return view_.Delete(key);
  }
  absl::StatusOr<std::string> CompareSet(std::string_view key, std::string_view expected,
                                         std::string_view desired) override {
    absl::SleepFor(d_);
    return view_.CompareSet(key, expected, desired);
  }

 private:
  rendezvous::PrefixStore view_;
  const absl::Duration d_;
};

ExchangeOptions Options(int machine, int machines) {
  ExchangeOptions o;
  o.machine_rank = machine;
  o.num_machines = machines;
  o.hang_timeout = absl::Milliseconds(100);  // suspect after 50 ms without activity
  o.interval = absl::Milliseconds(20);
  o.report_wait = absl::Seconds(5);  // generous: every machine reports, even on a loaded host
  return o;
}

// Rank `rank` of machine `machine` waiting in collective 61, idle since `since`.
RankSnapshot Waiting(int rank, int machine, absl::Duration idle, bool stopped) {
  RankSnapshot r;
  r.rank = rank;
  r.machine_rank = machine;
  r.host = "node" + std::to_string(machine);
  r.progress = progress::Record{30, 61, 60, true};
  r.stopped = stopped;
  r.idle_for = idle;
  r.stalled_for = idle;
  return r;
}

// One machine: its exchange and what its supervisor publishes every monitor interval (idle times
// advance with the clock, so the activity counter stands still, as in a hung job).
struct Machine {
  int machine = 0;
  std::unique_ptr<ProgressExchange> exchange;
  std::vector<absl::Duration> idle_at_start;  // per local rank, at `start`
  std::atomic<int> stopped_rank{-1};          // seen stopped from now on (-1: none)

  std::vector<RankSnapshot> Ranks(absl::Time start, absl::Time now) const {
    std::vector<RankSnapshot> out;
    for (int i = 0; i < 2; ++i) {
      const int rank = 2 * machine + i;
      out.push_back(Waiting(rank, machine,
                            idle_at_start[static_cast<std::size_t>(i)] + (now - start),
                            rank == stopped_rank.load()));
    }
    return out;
  }
  void Publish(absl::Time start) {
    const absl::Time now = absl::Now();
    std::vector<RankSnapshot> ranks = Ranks(start, now);
    const absl::Duration idle = std::min(ranks[0].idle_for, ranks[1].idle_for);
    exchange->Publish(std::move(ranks), idle, idle, now);
  }
  // Proposes what HangWatch would: the diagnosis from its own ranks and its copy of the others.
  void Propose(absl::Time start) {
    const absl::Time now = absl::Now();
    std::vector<RankSnapshot> ranks = Ranks(start, now);
    for (RankSnapshot& r : exchange->OtherRanks(now)) ranks.push_back(std::move(r));
    exchange->Propose(DiagnoseHang(ranks, absl::Seconds(5)));
  }
};

// Waits up to 10 s until `exchange` has settled; returns its verdict encoded.
std::string AwaitVerdict(const ProgressExchange& exchange) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::optional<HangVerdict> v = exchange.Settled();
  while (!v.has_value() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
    v = exchange.Settled();
  }
  return v.has_value() ? EncodeVerdict(*v) : "(not settled)";
}

// Generated jobs of 2-3 machines x 2 ranks, one rank SIGSTOPped inside the collective every rank
// is in, and a rank elsewhere idle longer (so an inference from a copy without the stop names it).
// Which machines propose, in which order, how late the stopped rank's machine publishes (its store
// calls are slow) and whether the proposers ever saw its stop vary: every machine settles on the
// same verdict, and it names the stopped rank as stopped.
TEST(ProgressExchangeTest, EveryMachineSettlesOnTheObservedStopWhoeverProposesFirst) {
  std::mt19937 gen(25);
  constexpr int kCases = 12;
  for (int c = 0; c < kCases; ++c) {
    const int count = 2 + static_cast<int>(gen() % 2);
    const int stopped = static_cast<int>(gen() % static_cast<unsigned>(2 * count));
    const int slow = stopped / 2;
    rendezvous::InMemoryStore base;
    std::vector<Machine> machines(static_cast<std::size_t>(count));
    const absl::Time start = absl::Now();
    for (int m = 0; m < count; ++m) {
      Machine& machine = machines[static_cast<std::size_t>(m)];
      machine.machine = m;
      for (int i = 0; i < 2; ++i) {
        // The stopped rank idle 5-6 s, some other rank 7-8 s: idle first by its copy alone.
        const int rank = 2 * m + i;
        const int ms = rank == stopped ? 5000 : (rank == (stopped + 1) % (2 * count) ? 7000 : 4000);
        machine.idle_at_start.push_back(absl::Milliseconds(ms + static_cast<int>(gen() % 1000)));
      }
      const absl::Duration delay =
          m == slow ? absl::Milliseconds(gen() % 50) : absl::Milliseconds(gen() % 10);
      machine.exchange = std::make_unique<ProgressExchange>(
          std::make_unique<SlowStore>(base, delay), Options(m, count));
      machine.Publish(start);  // before the stop was seen: every copy of it says "waiting"
    }
    // The supervisors: every machine publishes its ranks every 10 ms.
    std::atomic<bool> done{false};
    std::thread supervisors([&] {
      while (!done.load()) {
        for (Machine& machine : machines) machine.Publish(start);
        absl::SleepFor(absl::Milliseconds(10));
      }
    });
    // Let every machine read the others' first publication (or not, for some cases).
    absl::SleepFor(absl::Milliseconds(gen() % 150));
    machines[static_cast<std::size_t>(slow)].stopped_rank = stopped;
    machines[static_cast<std::size_t>(slow)].Publish(start);
    // Proposals: one or more of the other machines in a random order, then perhaps the stopped
    // rank's machine; a machine that proposes nothing (its launcher starved, or its ranks looked
    // active) learns of the hang from the report counter, reports and adopts the stored verdict.
    std::vector<int> order;
    for (int m = 0; m < count; ++m) {
      if (m != slow) order.push_back(m);
    }
    std::shuffle(order.begin(), order.end(), gen);
    order.resize(1 + gen() % order.size());
    const bool slow_proposes = gen() % 2 == 0;
    std::string plan;
    for (int m : order) {
      absl::SleepFor(absl::Milliseconds(gen() % 40));
      machines[static_cast<std::size_t>(m)].Publish(start);  // HangWatch: publish, then propose
      machines[static_cast<std::size_t>(m)].Propose(start);
      plan += std::to_string(m) + " ";
    }
    if (slow_proposes) {
      absl::SleepFor(absl::Milliseconds(gen() % 40));
      machines[static_cast<std::size_t>(slow)].Publish(start);
      machines[static_cast<std::size_t>(slow)].Propose(start);
      plan += std::to_string(slow);
    }
    SCOPED_TRACE(::testing::Message() << "case " << c << ": " << count << " machines, rank "
                                      << stopped << " stopped, proposals from machines " << plan);
    std::vector<std::string> verdicts;
    for (const Machine& m : machines) verdicts.push_back(AwaitVerdict(*m.exchange));
    done = true;
    supervisors.join();
    for (const std::string& v : verdicts) EXPECT_EQ(v, verdicts[0]);
    std::optional<HangVerdict> first = DecodeVerdict(verdicts[0]);
    ASSERT_TRUE(first.has_value()) << verdicts[0];
    EXPECT_EQ(first->rank, stopped);
    EXPECT_EQ(first->machine_rank, slow);
    EXPECT_THAT(DescribeVerdict(*first), HasSubstr("is stopped (process state T"));
  }
}

// The stopped rank's machine never reports (its launcher no longer answers): after the report
// wait, the proposer decides from the copy it read, which shows the stop.
TEST(ProgressExchangeTest, AMachineThatDoesNotReportIsJudgedByItsLastCopy) {
  rendezvous::InMemoryStore base;
  rendezvous::PrefixStore silent("attempt0/", base);
  ASSERT_TRUE(
      silent
          .Set("accel-launch/progress/1", EncodeSnapshots({Waiting(2, 1, absl::Seconds(5), false),
                                                           Waiting(3, 1, absl::Seconds(5), true)}))
          .ok());
  ExchangeOptions options = Options(0, 2);
  options.report_wait = absl::Milliseconds(300);
  Machine m0;
  m0.idle_at_start = {absl::Seconds(9), absl::Seconds(9)};
  m0.exchange = std::make_unique<ProgressExchange>(
      std::make_unique<SlowStore>(base, absl::ZeroDuration()), options);
  const absl::Time start = absl::Now();
  // Wait until the copy of machine 1 was read (after half the hang timeout without activity).
  const absl::Time deadline = start + absl::Seconds(10);
  while (m0.exchange->OtherRanks(absl::Now()).empty() && absl::Now() < deadline) {
    m0.Publish(start);
    absl::SleepFor(absl::Milliseconds(10));
  }
  const absl::Time proposed = absl::Now();
  m0.Propose(start);
  std::optional<HangVerdict> v = DecodeVerdict(AwaitVerdict(*m0.exchange));
  ASSERT_TRUE(v.has_value());
  EXPECT_GE(absl::Now() - proposed, options.report_wait);  // it waited for machine 1's report
  EXPECT_EQ(v->rank, 3);
  EXPECT_FALSE(v->inferred);
}

// Machine 1's launcher was starved: its last publication predates the stop of rank 3. Machine 0
// finds the job hung; machine 1 must report a sample taken after it learned of the hang (its
// supervisor's next one, here 300 ms later), not the copy it held, and never proposes itself.
TEST(ProgressExchangeTest, AReportIsSampledAfterTheHangWasReported) {
  rendezvous::InMemoryStore base;
  std::vector<Machine> machines(2);
  const absl::Time start = absl::Now();
  for (int m = 0; m < 2; ++m) {
    machines[static_cast<std::size_t>(m)].machine = m;
    machines[static_cast<std::size_t>(m)].idle_at_start = {absl::Seconds(9 - 3 * m),
                                                           absl::Seconds(9 - 3 * m)};
    machines[static_cast<std::size_t>(m)].exchange = std::make_unique<ProgressExchange>(
        std::make_unique<SlowStore>(base, absl::ZeroDuration()), Options(m, 2));
    machines[static_cast<std::size_t>(m)].Publish(start);
  }
  // Machine 0 has read machine 1's ranks (not stopped) once it suspects a hang.
  const absl::Time deadline = start + absl::Seconds(10);
  while (machines[0].exchange->OtherRanks(absl::Now()).empty() && absl::Now() < deadline) {
    machines[0].Publish(start);
    absl::SleepFor(absl::Milliseconds(10));
  }
  machines[1].stopped_rank = 3;  // seen by machine 1's next sample only
  machines[0].Publish(start);
  machines[0].Propose(start);  // from its copy: rank 0 went idle first, inferred
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(machines[0].exchange->Settled().has_value());  // waits for machine 1's report
  machines[1].Publish(start);
  for (const Machine& m : machines) {
    std::optional<HangVerdict> v = DecodeVerdict(AwaitVerdict(*m.exchange));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->rank, 3);
    EXPECT_FALSE(v->inferred);
  }
}

// Issue 35: machine 1's launcher is starved past the report wait. Machine 0's copy of its ranks
// predates the stop of rank 3, so machine 0 alone can only infer (rank 0 went idle first, on a
// healthy machine). An inference does not settle while a report is missing: machine 1's report,
// a second late, shows the stop, and both machines name rank 3 (an inferred verdict would evict
// the healthy machine under --nnodes).
TEST(ProgressExchangeTest, AnInferenceWaitsForTheStarvedMachinesReport) {
  rendezvous::InMemoryStore base;
  std::vector<Machine> machines(2);
  const absl::Time start = absl::Now();
  for (int m = 0; m < 2; ++m) {
    ExchangeOptions options = Options(m, 2);
    options.hang_timeout = absl::Seconds(3);
    options.report_wait = absl::Milliseconds(300);
    machines[static_cast<std::size_t>(m)].machine = m;
    machines[static_cast<std::size_t>(m)].idle_at_start = {absl::Seconds(9 - 3 * m),
                                                           absl::Seconds(9 - 3 * m)};
    machines[static_cast<std::size_t>(m)].exchange = std::make_unique<ProgressExchange>(
        std::make_unique<SlowStore>(base, absl::ZeroDuration()), options);
    machines[static_cast<std::size_t>(m)].Publish(start);
  }
  const absl::Time deadline = start + absl::Seconds(10);
  while (machines[0].exchange->OtherRanks(absl::Now()).empty() && absl::Now() < deadline) {
    machines[0].Publish(start);
    absl::SleepFor(absl::Milliseconds(10));
  }
  machines[1].stopped_rank = 3;  // machine 1's launcher samples it only a second later
  machines[0].Publish(start);
  machines[0].Propose(start);
  absl::SleepFor(absl::Seconds(1));
  EXPECT_FALSE(machines[0].exchange->Settled().has_value())
      << EncodeVerdict(machines[0].exchange->Settled().value_or(HangVerdict{}));
  machines[1].Publish(start);
  for (const Machine& m : machines) {
    std::optional<HangVerdict> v = DecodeVerdict(AwaitVerdict(*m.exchange));
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->rank, 3);
    EXPECT_EQ(v->machine_rank, 1);
    EXPECT_THAT(DescribeVerdict(*v), HasSubstr("is stopped (process state T"));
  }
}

}  // namespace
}  // namespace accel::launcher
