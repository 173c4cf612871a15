// AgentRendezvous's conversions between the launcher's failure rows and the rendezvous
// protocol's root causes (declared in launcher/agent/rendezvous.h).
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "launcher/agent/rendezvous.h"  // IWYU pragma: associated

namespace accel::launcher {

rendezvous::RootCause ToRootCause(const WorkerFailure& failure) {
  rendezvous::RootCause cause;
  cause.machine_rank = failure.machine_rank;
  cause.hostname = failure.host;
  cause.rank = failure.rank;
  cause.exit_code = failure.exit.signal == 0 ? failure.exit.exit_code : 0;
  cause.signal = failure.exit.signal;
  cause.message = absl::StrCat("local rank ", failure.local_rank, ", pid ", failure.pid);
  if (!failure.detail.empty()) {
    absl::StrAppend(&cause.message, "; ", failure.detail);
  }
  if (!failure.error_message.empty()) {
    absl::StrAppend(&cause.message, "; error file: ", failure.error_message);
  }
  if (!failure.stderr_tail.empty()) {
    absl::StrAppend(&cause.message, "; last stderr: ", failure.stderr_tail.back());
  }
  return cause;
}

WorkerFailure FromRootCause(const rendezvous::RootCause& cause, absl::Time seen) {
  WorkerFailure f;
  f.machine_rank = cause.machine_rank;
  f.host = cause.hostname;
  f.rank = cause.rank;
  f.local_rank = -1;
  f.exit.exit_code = cause.exit_code;
  f.exit.signal = cause.signal;
  f.time = seen;
  f.detail = cause.message;
  // ToRootCause's message starts "local rank L, pid P": show them in their columns.
  int local_rank = -1, pid = 0, consumed = 0;
  if (std::sscanf(cause.message.c_str(), "local rank %d, pid %d%n", &local_rank, &pid, &consumed) ==
      2) {
    f.local_rank = local_rank;
    f.pid = pid;
    f.detail = cause.message.substr(static_cast<std::size_t>(consumed));
    if (f.detail.rfind("; ", 0) == 0) {
      f.detail = f.detail.substr(2);
    }
  }
  return f;
}

rendezvous::RootCause ServerLostCause(const rendezvous::Event& event) {
  rendezvous::RootCause cause;
  cause.machine_rank = 0;
  cause.rank = -1;
  cause.message =
      absl::StrCat("machine 0 (rendezvous host) is ",
                   event.server_unreachable ? "unreachable: " : "gone: ", event.root_cause.message);
  return cause;
}

}  // namespace accel::launcher
