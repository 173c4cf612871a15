// What accel-preflight measures on one machine, through one transport: the links out of this
// machine (bandwidth: the fastest of three streams of 1 MiB messages, each about `link_budget`;
// round trip of a one-byte message) and the time of an all-reduce of `bucket_bytes` over every
// machine. Every machine runs the same probe; the links are measured one at a time, in the same
// order everywhere, with a barrier between them, so that each measurement has the network to
// itself. Every wait is bounded by `timeout`. The probe's transport adapter (gloo_probe.cc,
// nccl_probe.cc) catches its library's exceptions and returns them as errors.
#ifndef ACCEL_LAUNCHER_PREFLIGHT_PROBE_H_
#define ACCEL_LAUNCHER_PREFLIGHT_PROBE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "launcher/preflight/link_matrix.h"
#include "rendezvous/store/store.h"

namespace accel::launcher {

struct ProbeOptions {
  int rank = 0;  // this machine
  int world = 1;
  std::string address;  // where the other machines reach this one
  std::int64_t bucket_bytes = 0;
  absl::Duration link_budget;
  absl::Duration timeout;
};

struct ProbeResult {
  std::vector<LinkMeasure> outgoing;  // links from this machine
  double allreduce_s = 0;
};

// Gloo's TCP transport (CPU jobs). `store` connects the machines (a namespace of their own).
absl::StatusOr<ProbeResult> RunGlooProbe(rendezvous::Store& store, const ProbeOptions& options);

// NCCL on GPU 0 of each machine (GPU jobs); UNIMPLEMENTED when built without NCCL.
absl::StatusOr<ProbeResult> RunNcclProbe(rendezvous::Store& store, const ProbeOptions& options);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PREFLIGHT_PROBE_H_
