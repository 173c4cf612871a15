// rendezvous_bench: how long N simulated agents take to rendezvous on one server (loopback), and
// the KV store's Set/Get throughput. Not a test. `rendezvous_bench --help` prints the usage.
//
// Each simulated agent issues one Join (its own machine_rank and nonce) through the callback
// client API, all at once, on its own channel (--channels=0) or spread over C channels. Per N it
// prints time-to-all-joined (first call start → last answer) and the p50/p99 of per-agent join
// latency, and with --out writes the same rows to a CSV. No plot here: bench/plot_rendezvous.sh
// draws the CSVs with gnuplot where it is installed.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "common/exit_codes.h"
#include "rendezvous/grpc/channel.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/grpc/store_client.h"

namespace accel::rendezvous {
namespace {

constexpr char kToken[] = "bench-token";
// --tls=1 (default): the launcher's own TCP transport, mutual TLS with token proofs
// (rendezvous/grpc/transport.h); 0: plaintext, no token (rdzv_insecure), for comparison.
bool g_tls = true;
std::string Token() { return g_tls ? kToken : ""; }

struct JoinRow {
  int agents = 0;
  int channels = 0;
  double all_joined_ms = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int failures = 0;
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint) {
  ChannelOptions options;
  options.endpoint = endpoint;
  options.token = Token();
  options.own_connection = true;  // a connection per channel, like agents
  return *MakeChannel(options);
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t index =
      std::min(values.size() - 1, static_cast<std::size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}

JoinRow BenchJoin(int agents, int channel_count, bool with_machines, bool preconnect) {
  ServerOptions options;
  options.num_machines = agents;
  options.run_id = "bench";
  options.token = Token();
  options.rdzv_timeout = absl::Seconds(60);
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    std::exit(accel::kExitWorkerFailed);
  }
  const int channels = channel_count <= 0 ? agents : std::min(agents, channel_count);
  std::vector<std::unique_ptr<v1::Rendezvous::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    std::shared_ptr<grpc::Channel> channel = NewChannel((*server)->endpoint());
    if (preconnect &&
        !channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(30)))) {
      std::fprintf(stderr, "channel %d did not connect\n", c);
      std::exit(accel::kExitWorkerFailed);
    }
    stubs.push_back(v1::Rendezvous::NewStub(channel));
  }
  struct Call {
    grpc::ClientContext context;
    v1::JoinRequest request;
    v1::JoinResponse response;
    absl::Time start;
    absl::Time end;
    bool ok = false;
    std::string error;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int rank = 0; rank < agents; ++rank) {
    auto call = std::make_unique<Call>();
    call->request.set_run_id("bench");
    call->request.set_machine_rank(rank);
    call->request.set_num_machines(agents);
    call->request.set_local_processes(8);
    call->request.set_hostname(absl::StrCat("node", rank));
    call->request.add_addresses(absl::StrCat("10.0.", rank / 256, ".", rank % 256));
    call->request.set_agent_nonce(absl::StrCat("agent", rank));
    call->request.set_want_machines(with_machines);
    (*call->request.mutable_config_fingerprint())["mixed_precision"] = "fp16";
    call->context.set_wait_for_ready(true);
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(90)));
    calls.push_back(std::move(call));
  }
  absl::BlockingCounter done(agents);
  for (int rank = 0; rank < agents; ++rank) {
    Call* call = calls[rank].get();
    call->start = absl::Now();
    stubs[rank % channels]->async()->Join(&call->context, &call->request, &call->response,
                                          [call, &done](grpc::Status status) {
                                            call->end = absl::Now();
                                            call->ok = status.ok();
                                            call->error = status.error_message();
                                            done.DecrementCount();
                                          });
  }
  done.Wait();
  JoinRow row;
  row.agents = agents;
  row.channels = channels;
  absl::Time first = absl::InfiniteFuture();
  absl::Time last = absl::InfinitePast();
  std::vector<double> latencies;
  for (const auto& call : calls) {
    first = std::min(first, call->start);
    last = std::max(last, call->end);
    latencies.push_back(absl::ToDoubleMilliseconds(call->end - call->start));
    if (!call->ok && row.failures++ == 0) {
      std::fprintf(stderr, "first failed join: %s\n", call->error.c_str());
    }
  }
  row.all_joined_ms = absl::ToDoubleMilliseconds(last - first);
  row.p50_ms = Percentile(latencies, 0.50);
  row.p99_ms = Percentile(latencies, 0.99);
  (*server)->Shutdown();
  return row;
}

// Returns this process's resident set in MiB (/proc/self/statm).
double ResidentMiB() {
  long pages = 0, resident = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// Sets `entries` distinct tiny keys (4 client threads) on a server whose store cap is
// `cap_mib`; prints how many it kept and how much resident memory they added.
void BenchKvMemory(int entries, int cap_mib) {
  ServerOptions options;
  options.run_id = "bench";
  options.token = Token();
  options.limits.max_total_bytes = static_cast<std::int64_t>(cap_mib) << 20;
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) std::exit(accel::kExitWorkerFailed);
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < kThreads; ++t) {
    stores.push_back(*ConnectStore((*server)->endpoint(), Token(), "bench/0"));
    (void)stores.back()->Set("warmup" + std::to_string(t), "x");
  }
  const double before = ResidentMiB();
  std::atomic<int> stored{0}, refused{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = t; i < entries; i += kThreads) {
        (stores[t]->Set(absl::StrCat("k", i), "v").ok() ? stored : refused).fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  std::printf(
      "kv memory: %d tiny entries asked, %d kept, %d refused (cap %d MiB): resident +%.1f "
      "MiB\n",
      entries, stored.load(), refused.load(), cap_mib, ResidentMiB() - before);
  (*server)->Shutdown();
}

// Returns Set+Get ops/s with `threads` clients each doing `ops` / threads pairs.
double BenchKv(int ops, int threads, std::size_t value_bytes) {
  ServerOptions options;
  options.run_id = "bench";
  options.token = Token();
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) std::exit(accel::kExitWorkerFailed);
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < threads; ++t) {
    stores.push_back(*ConnectStore((*server)->endpoint(), Token(), "bench/0"));
    (void)stores.back()->Set("warmup", "x");
  }
  std::atomic<int> failures{0};
  const std::string value(value_bytes, 'v');
  const absl::Time start = absl::Now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < ops / threads / 2; ++i) {
        const std::string key = absl::StrCat("k", t, "_", i % 256);
        if (!stores[t]->Set(key, value).ok()) failures.fetch_add(1);
        if (!stores[t]->Get(key, absl::ZeroDuration()).ok()) failures.fetch_add(1);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (failures.load() > 0) std::fprintf(stderr, "kv: %d failed ops\n", failures.load());
  (*server)->Shutdown();
  return (ops / threads / 2) * 2 * threads / seconds;
}

constexpr char kUsage[] =
    "usage: rendezvous_bench [--min_agents=2] [--max_agents=4096] [--channels=0]\n"
    "                        [--with_machines=0] [--preconnect=0] [--kv_ops=20000]\n"
    "                        [--kv_threads=4] [--kv_entries=0] [--kv_cap_mib=64] [--tls=1]\n"
    "                        [--out=FILE.csv]\n"
    "Simulated agents join one rendezvous server on 127.0.0.1, N = min_agents, 2*min_agents, ...\n"
    "up to max_agents; then KV Set+Get throughput with 1 and kv_threads client threads.\n"
    "  --channels=C       0: a channel (TCP connection) per agent; C: agents share C channels\n"
    "  --with_machines=1  every answer lists all machines (O(N^2) bytes per attempt); the\n"
    "                     default 0 is the launcher's own path (each machine gets its own entry)\n"
    "  --preconnect=1     connect every channel before the clock starts\n"
    "  --tls=0            plaintext without a token; the default 1 is the launcher's transport:\n"
    "                     mutual TLS with certificates from the token\n"
    "  --kv_ops=0         skip the KV part\n"
    "  --kv_entries=N     also set N distinct tiny keys under a --kv_cap_mib store cap (default\n"
    "                     64) and print how many were kept and the resident memory they added\n"
    "  --out=FILE.csv     also write the rows as CSV (default: stdout only)\n";

struct Flags {
  int min_agents = 2;
  int max_agents = 4096;
  int channels = 0;
  bool with_machines = false;
  bool preconnect = false;
  int kv_ops = 20000;
  int kv_threads = 4;
  int kv_entries = 0;
  int kv_cap_mib = 64;
  std::string out;
};

// Parses --name=value flags; returns false (having printed why) on anything else.
bool ParseFlags(int argc, char** argv, Flags& flags) {
  const std::map<std::string, int*> ints = {
      {"min_agents", &flags.min_agents}, {"max_agents", &flags.max_agents},
      {"channels", &flags.channels},     {"kv_ops", &flags.kv_ops},
      {"kv_threads", &flags.kv_threads}, {"kv_entries", &flags.kv_entries},
      {"kv_cap_mib", &flags.kv_cap_mib}};
  const std::map<std::string, bool*> bools = {
      {"with_machines", &flags.with_machines}, {"preconnect", &flags.preconnect}, {"tls", &g_tls}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2, eq - 2) : "";
    const std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    int number = 0;
    if (name == "out" && !value.empty()) {
      flags.out = value;
    } else if (ints.count(name) && absl::SimpleAtoi(value, &number) && number >= 0) {
      *ints.at(name) = number;
    } else if (bools.count(name) && (value == "0" || value == "1")) {
      *bools.at(name) = value == "1";
    } else {
      std::fprintf(stderr, "rendezvous_bench: bad argument '%s'\n%s", arg.c_str(), kUsage);
      return false;
    }
  }
  if (flags.min_agents < 2 || flags.max_agents < flags.min_agents || flags.kv_threads < 1) {
    std::fprintf(stderr, "rendezvous_bench: need 2 <= min_agents <= max_agents, kv_threads >= 1\n");
    return false;
  }
  return true;
}

// Raises the open-file limit to fit `agents` channels (each a client and a server socket).
void RaiseFileLimit(int agents, int channels) {
  const rlim_t want = static_cast<rlim_t>(2 * (channels > 0 ? channels : agents) + 1024);
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= want) return;
  struct rlimit raised = {want, std::max(want, limit.rlim_max)};
  if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {  // raising the hard limit needs root
    raised = {std::min(want, limit.rlim_max), limit.rlim_max};
    ::setrlimit(RLIMIT_NOFILE, &raised);
    if (raised.rlim_cur < want) {
      std::fprintf(stderr,
                   "rendezvous_bench: %d channels need %llu open files, the limit is %llu: use "
                   "--channels=N to share channels\n",
                   channels > 0 ? channels : agents, static_cast<unsigned long long>(want),
                   static_cast<unsigned long long>(raised.rlim_cur));
    }
  }
}

}  // namespace
}  // namespace accel::rendezvous

int main(int argc, char** argv) {
  using namespace accel::rendezvous;  // NOLINT: a benchmark's main
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return accel::kExitOk;
    }
  }
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return accel::kExitUsage;
  // As accel-launch does (launcher/cli/process_main.cc): no deadlock-detection graph.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  RaiseFileLimit(flags.max_agents, flags.channels);
  std::FILE* csv = nullptr;
  if (!flags.out.empty() && (csv = std::fopen(flags.out.c_str(), "w")) == nullptr) {
    std::perror(("open " + flags.out).c_str());
    return accel::kExitWorkerFailed;
  }
  if (csv != nullptr) {
    std::fprintf(csv,
                 "kind,agents,channels,with_machines,preconnect,all_joined_ms,p50_ms,p99_ms,"
                 "failures,ops_per_s\n");
  }
  std::printf("transport: %s\n",
              g_tls ? "mutual TLS with token proofs (transport v2)" : "plaintext");
  std::printf("%8s %9s %16s %10s %10s %9s\n", "agents", "channels", "all_joined_ms", "p50_ms",
              "p99_ms", "failures");
  int failures = 0;
  for (int n = flags.min_agents; n <= flags.max_agents; n *= 2) {
    const JoinRow row = BenchJoin(n, flags.channels, flags.with_machines, flags.preconnect);
    failures += row.failures;
    std::printf("%8d %9d %16.1f %10.1f %10.1f %9d\n", row.agents, row.channels, row.all_joined_ms,
                row.p50_ms, row.p99_ms, row.failures);
    if (csv != nullptr) {
      std::fprintf(csv, "join,%d,%d,%d,%d,%.3f,%.3f,%.3f,%d,\n", row.agents, row.channels,
                   flags.with_machines ? 1 : 0, flags.preconnect ? 1 : 0, row.all_joined_ms,
                   row.p50_ms, row.p99_ms, row.failures);
    }
    std::fflush(stdout);
  }
  for (int threads : {1, flags.kv_threads}) {
    if (flags.kv_ops == 0) break;
    const double rate = BenchKv(flags.kv_ops, threads, 64);
    std::printf("kv Set+Get, 64-byte values, %d client thread(s): %.0f ops/s\n", threads, rate);
    if (csv != nullptr) std::fprintf(csv, "kv,,%d,,,,,,,%.0f\n", threads, rate);
  }
  if (flags.kv_entries > 0) BenchKvMemory(flags.kv_entries, flags.kv_cap_mib);
  if (csv != nullptr) {
    std::fclose(csv);
    std::printf("wrote %s\n", flags.out.c_str());
  }
  return failures == 0 ? accel::kExitOk : accel::kExitWorkerFailed;
}
