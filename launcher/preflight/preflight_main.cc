// accel-preflight: one machine's side of the network preflight, started by accel-launch's agent
// after the machines joined (launcher/agent/preflight_run.h). It connects to the other machines
// through the rendezvous store (namespace --namespace, token in ACCEL_RDZV_TOKEN), measures with
// the job's transport (probe.h), shares what it measured through the store, and writes the whole
// job's result (link_matrix.h's text) to --out. Exit 0, or 1 with the reason on stderr.
//
//   accel-preflight --rank R --world N --store HOST:PORT --namespace NS --address ADDR
//                   --transport gloo|nccl --bucket_bytes B --link_budget_ms M --timeout_ms T
//                   --out FILE [--tls_ca FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/safe_open.h"
#include "launcher/preflight/probe.h"
#include "rendezvous/grpc/store_client.h"

namespace accel::launcher {
namespace {

struct Args {
  ProbeOptions probe;
  std::string store;
  std::string name_space;
  std::string transport = "gloo";
  std::string out;
  std::string tls_ca;
};

absl::StatusOr<Args> ParseArgs(int argc, char** argv) {
  std::map<std::string, std::string> values;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) return absl::InvalidArgumentError("unexpected " + name);
    values[name.substr(2)] = argv[i + 1];
  }
  Args a;
  std::int64_t budget_ms = 0, timeout_ms = 0;
  const bool ok = absl::SimpleAtoi(values["rank"], &a.probe.rank) &&
                  absl::SimpleAtoi(values["world"], &a.probe.world) &&
                  absl::SimpleAtoi(values["bucket_bytes"], &a.probe.bucket_bytes) &&
                  absl::SimpleAtoi(values["link_budget_ms"], &budget_ms) &&
                  absl::SimpleAtoi(values["timeout_ms"], &timeout_ms);
  a.store = values["store"];
  a.name_space = values["namespace"];
  a.probe.address = values["address"];
  a.transport = values["transport"];
  a.out = values["out"];
  a.tls_ca = values["tls_ca"];
  if (!ok || a.store.empty() || a.name_space.empty() || a.out.empty() || a.probe.world < 2 ||
      a.probe.rank < 0 || a.probe.rank >= a.probe.world ||
      (a.transport != "gloo" && a.transport != "nccl")) {
    return absl::InvalidArgumentError(
        "usage: accel-preflight --rank R --world N --store HOST:PORT --namespace NS --address ADDR "
        "--transport gloo|nccl --bucket_bytes B --link_budget_ms M --timeout_ms T --out FILE");
  }
  a.probe.link_budget = absl::Milliseconds(budget_ms);
  a.probe.timeout = absl::Milliseconds(timeout_ms);
  return a;
}

std::string EncodeLinks(const ProbeResult& r) {
  std::string out = absl::StrCat(r.allreduce_s, "\n");
  for (const LinkMeasure& l : r.outgoing) {
    absl::StrAppend(&out, l.from, "\t", l.to, "\t", l.bytes_per_s, "\t", l.rtt_s, "\n");
  }
  return out;
}

// Reads every machine's address and links from the store into the job's result.
absl::StatusOr<PreflightResult> Gather(rendezvous::Store& store, const Args& a) {
  PreflightResult result;
  result.transport = a.transport;
  result.allreduce_bytes = a.probe.bucket_bytes;
  for (int m = 0; m < a.probe.world; ++m) {
    absl::StatusOr<std::string> address = store.Get(absl::StrCat("address/", m), a.probe.timeout);
    absl::StatusOr<std::string> links = store.Get(absl::StrCat("links/", m), a.probe.timeout);
    if (!address.ok()) return address.status();
    if (!links.ok()) return links.status();
    result.hosts.push_back(*address);
    std::vector<std::string> lines = absl::StrSplit(*links, '\n', absl::SkipEmpty());
    double allreduce_s = 0;
    if (lines.empty() || !absl::SimpleAtod(lines[0], &allreduce_s)) {
      return absl::DataLossError(absl::StrCat("machine ", m, "'s measurements"));
    }
    result.allreduce_s = std::max(result.allreduce_s, allreduce_s);
    for (std::size_t i = 1; i < lines.size(); ++i) {
      std::vector<std::string> f = absl::StrSplit(lines[i], '\t');
      LinkMeasure l;
      if (f.size() != 4 || !absl::SimpleAtoi(f[0], &l.from) || !absl::SimpleAtoi(f[1], &l.to) ||
          !absl::SimpleAtod(f[2], &l.bytes_per_s) || !absl::SimpleAtod(f[3], &l.rtt_s)) {
        return absl::DataLossError(absl::StrCat("machine ", m, "'s measurements"));
      }
      result.links.push_back(l);
    }
  }
  return result;
}

absl::Status Run(const Args& a) {
  const char* token = std::getenv("ACCEL_RDZV_TOKEN");
  rendezvous::StoreClientOptions options;
  options.tls_ca_path = a.tls_ca;
  auto store =
      rendezvous::ConnectStore(a.store, token != nullptr ? token : "", a.name_space, options);
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->Set(absl::StrCat("address/", a.probe.rank), a.probe.address);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<ProbeResult> mine =
      a.transport == "nccl" ? RunNcclProbe(**store, a.probe) : RunGlooProbe(**store, a.probe);
  if (!mine.ok()) return mine.status();
  if (absl::Status s = (*store)->Set(absl::StrCat("links/", a.probe.rank), EncodeLinks(*mine));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<PreflightResult> all = Gather(**store, a);
  if (!all.ok()) return all.status();
  // No machine leaves before every machine has read the whole result (machine 0's agent may end
  // the job, and with it the store, right after).
  if (absl::Status s = (*store)->Set(absl::StrCat("gathered/", a.probe.rank), "1"); !s.ok()) {
    return s;
  }
  std::vector<std::string> gathered;
  for (int m = 0; m < a.probe.world; ++m) gathered.push_back(absl::StrCat("gathered/", m));
  if (absl::Status s = (*store)->Wait(gathered, a.probe.timeout); !s.ok()) return s;
  // In the launcher's private attempt directory, never through a planted file: safe_open.h.
  if (const int err = safe_open::ReplaceFile(a.out, EncodePreflight(*all), 0600); err != 0) {
    return absl::ErrnoToStatus(err, absl::StrCat("write ", a.out));
  }
  return absl::OkStatus();
}

}  // namespace

}  // namespace accel::launcher

int main(int argc, char** argv) {
  absl::StatusOr<accel::launcher::Args> args = accel::launcher::ParseArgs(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "accel-preflight: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  const absl::Status status = accel::launcher::Run(*args);
  if (!status.ok()) {
    std::fprintf(stderr, "accel-preflight: machine %d: %s\n", args->probe.rank,
                 std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
