// JoinCoordinator under elastic membership: JoinResponse.continues, which tells in-place jobs
// whether the previous generation's workers go on (and new ones join them) or every machine
// restarts its workers. Every way a generation ends, and mixes of them, against the rule: a
// membership change (a machine lost, evicted or joining) continues when a machine of the
// previous generation is in the next; a restart of every machine (a failure report, a hang on
// machine 0) does not; every machine of the generation is told the same.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/rendezvous/join/coordinator_elastic_fixture.h"

namespace accel::rendezvous {
namespace {

using testing_elastic::ElasticTest;
using testing_elastic::kT0;

// One scenario: machines 0..2 of MAX 3, MIN 1; generation 0 of `first`; `end` ends it at
// kT0 + 2 s; `rejoin` join from kT0 + 2.1 s on (one every 0.1 s); the generation that forms
// (by kT0 + 10 s) must hold `members`, each told `continues`.
class ContinuesTest;
struct Case {
  std::string name;
  std::vector<int> first;
  std::function<void(ContinuesTest&)> end;
  std::vector<int> rejoin;
  std::set<int> members;
  bool continues;
};

class ContinuesTest : public ElasticTest {
 public:
  void TestBody() override {}
  void Lose(int rank, absl::Time at) { coordinator_->WatchBroken(watch_ids_[rank], at); }
  void ReportKind(int rank, v1::ReportRequest::Kind kind, int worker) {
    ASSERT_TRUE(Report(rank, kind, worker, 0, kT0 + absl::Seconds(2)).ok());
  }
  void JoinAt(int rank, absl::Time at) { Join(rank, at); }
  void Run(const Case& c) {
    Start(1, 3, 5);
    FirstGeneration(c.first);
    c.end(*this);
    double at = 2.1;
    for (int rank : c.rejoin) {
      Join(rank, kT0 + absl::Seconds(at));
      at += 0.1;
    }
    coordinator_->Tick(kT0 + absl::Seconds(10));
    std::set<int> members;
    for (int rank = 0; rank < 3; ++rank) {
      auto answer = Take(rank);
      if (!answer.has_value() || !answer->ok()) continue;
      members.insert(rank);
      EXPECT_EQ((*answer)->attempt(), 1) << c.name << ": machine " << rank;
      EXPECT_EQ((*answer)->continues(), c.continues) << c.name << ": machine " << rank;
    }
    EXPECT_EQ(members, c.members) << c.name;
  }
};

TEST(CoordinatorContinuesTest, EveryWayAGenerationEndsAgainstTheRule) {
  using K = v1::ReportRequest;
  const absl::Time t2 = kT0 + absl::Seconds(2);
  std::vector<Case> cases;
  for (int k : {1, 2}) {  // machine k of three is lost, or evicted; the others go on
    std::vector<int> others = k == 1 ? std::vector<int>{0, 2} : std::vector<int>{0, 1};
    std::set<int> set(others.begin(), others.end());
    cases.push_back({"lost " + std::to_string(k),
                     {0, 1, 2},
                     [k, t2](ContinuesTest& t) { t.Lose(k, t2); },
                     others,
                     set,
                     true});
    cases.push_back({"evicted " + std::to_string(k),
                     {0, 1, 2},
                     [k](ContinuesTest& t) { t.ReportKind(k, K::HANG, 2 * k); },
                     others,
                     set,
                     true});
    // A failure report restarts every machine: nobody's workers go on.
    cases.push_back({"failure on " + std::to_string(k),
                     {0, 1, 2},
                     [k](ContinuesTest& t) { t.ReportKind(k, K::RESTART, 2 * k); },
                     {0, 1, 2},
                     {0, 1, 2},
                     false});
  }
  cases.push_back({"hang on machine 0 restarts everyone",
                   {0, 1, 2},
                   [](ContinuesTest& t) { t.ReportKind(0, K::HANG, 1); },
                   {0, 1, 2},
                   {0, 1, 2},
                   false});
  // Machine 2 starts while 0-1 train (its Join ends generation 0), then 0-1 rejoin.
  cases.push_back({"joiner",
                   {0, 1},
                   [](ContinuesTest& t) { t.JoinAt(2, kT0 + absl::Seconds(2)); },
                   {0, 1},
                   {0, 1, 2},
                   true});
  // Machine 1 lost and machine 2 joining in one generation: 0 goes on, 2 joins it.
  cases.push_back({"lost 1, joiner 2",
                   {0, 1},
                   [t2](ContinuesTest& t) { t.Lose(1, t2); },
                   {2, 0},
                   {0, 2},
                   true});
  // A failure's restart of everyone with a joiner arriving meanwhile: everyone starts afresh.
  cases.push_back({"failure on 1, joiner 2",
                   {0, 1},
                   [](ContinuesTest& t) { t.ReportKind(1, K::RESTART, 3); },
                   {2, 0, 1},
                   {0, 1, 2},
                   false});
  // Machine 1 lost; its survivor (machine 0) never rejoins: the generation of machine 2 alone
  // has nobody whose workers could go on.
  cases.push_back(
      {"no survivor rejoins", {0, 1}, [t2](ContinuesTest& t) { t.Lose(1, t2); }, {2}, {2}, false});
  for (const Case& c : cases) {
    ContinuesTest test;
    test.Run(c);
  }
}

// What a generation that continues says does not stick: the next restart of every machine
// answers false again.
TEST_F(ElasticTest, ContinuesIsForgottenByTheNextRestartOfEveryMachine) {
  Start(1, 3, 5);
  FirstGeneration({0, 1});
  Join(2, kT0 + absl::Seconds(2));  // scale-up: generation 1 continues
  Join(0, kT0 + absl::Seconds(2.1));
  Join(1, kT0 + absl::Seconds(2.2));
  for (int rank : {0, 1, 2}) EXPECT_TRUE(Joined(rank).continues());
  ASSERT_TRUE(Report(1, v1::ReportRequest::RESTART, 3, 1, kT0 + absl::Seconds(3)).ok());
  for (int rank : {0, 1, 2}) Join(rank, kT0 + absl::Seconds(3.1));
  for (int rank : {0, 1, 2}) {
    const v1::JoinResponse r = Joined(rank);
    EXPECT_EQ(r.attempt(), 2);
    EXPECT_FALSE(r.continues()) << "machine " << rank;
  }
}

}  // namespace
}  // namespace accel::rendezvous
