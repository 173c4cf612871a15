// rendezvous_bench: how long N simulated agents take to rendezvous on one server (loopback), and
// the KV store's Set/Get throughput. Not a test.
//
//   rendezvous_bench [--max_agents=4096] [--channels=0] [--with_machines=1] [--kv_ops=20000]
//                    [--kv_threads=4] [--preconnect=0] [--out=rendezvous_bench.csv]
//
// --with_machines=1 asks every agent's response to list all machines (O(N^2) bytes per attempt);
// 0 leaves the list out, as simulated agents at scale should. --preconnect=1 connects every
// channel before the clock starts (measures the rendezvous alone, not TCP/HTTP2 setup).
//
// Each simulated agent issues one Join (its own machine_rank and nonce) through the callback
// client API, all at once, on its own channel (--channels=0) or spread over C channels. Per N it
// prints time-to-all-joined (first call start → last answer) and the p50/p99 of per-agent join
// latency, and writes the same rows to a CSV. No plot: the machine has neither gnuplot nor
// matplotlib; plot the CSV elsewhere.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "accel/rendezvous/v1/rendezvous.grpc.pb.h"
#include "common/exit_codes.h"
#include "rendezvous/grpc/auth.h"
#include "rendezvous/grpc/server.h"
#include "rendezvous/grpc/store_client.h"

namespace accel::rendezvous {
namespace {

constexpr char kToken[] = "bench-token";

struct JoinRow {
  int agents = 0;
  int channels = 0;
  double all_joined_ms = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  int failures = 0;
};

std::shared_ptr<grpc::Channel> NewChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection per channel, like agents
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
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
  options.token = kToken;
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
    call->context.AddMetadata(kTokenMetadataKey, kToken);
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
    if (!call->ok) ++row.failures;
  }
  row.all_joined_ms = absl::ToDoubleMilliseconds(last - first);
  row.p50_ms = Percentile(latencies, 0.50);
  row.p99_ms = Percentile(latencies, 0.99);
  (*server)->Shutdown();
  return row;
}

// Returns Set+Get ops/s with `threads` clients each doing `ops` / threads pairs.
double BenchKv(int ops, int threads, std::size_t value_bytes) {
  ServerOptions options;
  options.run_id = "bench";
  options.token = kToken;
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) std::exit(accel::kExitWorkerFailed);
  std::vector<std::unique_ptr<Store>> stores;
  for (int t = 0; t < threads; ++t) {
    stores.push_back(*ConnectStore((*server)->endpoint(), kToken, "bench/0"));
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

int IntFlag(const std::map<std::string, std::string>& flags, const char* name, int def) {
  auto it = flags.find(name);
  int value = def;
  if (it != flags.end() && !absl::SimpleAtoi(it->second, &value)) value = def;
  return value;
}

}  // namespace
}  // namespace accel::rendezvous

int main(int argc, char** argv) {
  using namespace accel::rendezvous;  // NOLINT: a benchmark's main
  std::map<std::string, std::string> flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flags[arg.substr(2, eq - 2)] = arg.substr(eq + 1);
    }
  }
  const int max_agents = IntFlag(flags, "max_agents", 4096);
  const int channels = IntFlag(flags, "channels", 0);
  const bool with_machines = IntFlag(flags, "with_machines", 1) != 0;
  const bool preconnect = IntFlag(flags, "preconnect", 0) != 0;
  const std::string out = flags.count("out") ? flags["out"] : "rendezvous_bench.csv";
  std::FILE* csv = std::fopen(out.c_str(), "w");
  if (csv == nullptr) {
    std::perror(("open " + out).c_str());
    return accel::kExitWorkerFailed;
  }
  std::fprintf(csv,
               "kind,agents,channels,with_machines,preconnect,all_joined_ms,p50_ms,p99_ms,failures,"
               "ops_per_s\n");
  std::printf("%8s %9s %16s %10s %10s %9s\n", "agents", "channels", "all_joined_ms", "p50_ms",
              "p99_ms", "failures");
  for (int n = 2; n <= max_agents; n *= 2) {
    const JoinRow row = BenchJoin(n, channels, with_machines, preconnect);
    std::printf("%8d %9d %16.1f %10.1f %10.1f %9d\n", row.agents, row.channels, row.all_joined_ms,
                row.p50_ms, row.p99_ms, row.failures);
    std::fprintf(csv, "join,%d,%d,%d,%d,%.3f,%.3f,%.3f,%d,\n", row.agents, row.channels,
                 with_machines ? 1 : 0, preconnect ? 1 : 0, row.all_joined_ms, row.p50_ms,
                 row.p99_ms, row.failures);
    std::fflush(stdout);
  }
  const int kv_ops = IntFlag(flags, "kv_ops", 20000);
  for (int threads : {1, IntFlag(flags, "kv_threads", 4)}) {
    const double rate = BenchKv(kv_ops, threads, 64);
    std::printf("kv Set+Get, 64-byte values, %d client thread(s): %.0f ops/s\n", threads, rate);
    std::fprintf(csv, "kv,,%d,,,,,,,%.0f\n", threads, rate);
  }
  std::fclose(csv);
  std::printf("wrote %s (no PNG: neither gnuplot nor python3-matplotlib is installed)\n",
              out.c_str());
  return accel::kExitOk;
}
