// Signals: the launcher's SIGINT/SIGTERM/SIGHUP arrive on a signalfd, read by the supervisor's
// event loop, never in an asynchronous handler.
//
// Construct a SignalFd before any other thread exists (gRPC starts threads): it blocks the
// signals in the calling thread, and threads created afterwards inherit that mask. Workers get
// the launcher's original mask back (original_mask()) between fork and exec.
#ifndef ACCEL_LAUNCHER_PROCESS_SIGNALS_H_
#define ACCEL_LAUNCHER_PROCESS_SIGNALS_H_

#include <signal.h>

#include <string>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace accel::launcher {

class SignalFd {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in this thread and opens a signalfd for them; SIGPIPE is
  // ignored by the launcher (a closed console must not kill it) and restored in workers.
  static absl::StatusOr<SignalFd> Create();

  SignalFd(SignalFd&&) noexcept = default;
  SignalFd& operator=(SignalFd&&) noexcept = default;
  ~SignalFd() = default;  // the signals stay blocked: the caller exits with ExitCodeForSignal(N)

  // Readable (POLLIN) when a signal is pending.
  int fd() const { return fd_.get(); }
  // The mask the launcher had before Create; workers start with it.
  const sigset_t& original_mask() const { return original_mask_; }

  // Returns the next pending signal number, or 0 when none is pending (never blocks). When
  // `sender` is given it receives the sending process's pid (0 for the kernel or unknown).
  int Read(pid_t* sender = nullptr) const;

  struct Info {
    int signal = 0;            // 0 = none pending
    bool from_kernel = false;  // sent by the kernel (the terminal's ^C or hangup), not kill(2)
    pid_t sender = 0;          // the sending process (0 for the kernel or unknown)
  };
  // Returns the next pending signal and who sent it (never blocks).
  Info ReadInfo() const;

 private:
  SignalFd() = default;
  UniqueFd fd_;
  sigset_t original_mask_{};
};

// Returns what the launcher says about the signal that stopped it: "stopped by SIGTERM from Slurm
// (scancel or the job's time limit)" when `sender` (the sending program's name) is slurmstepd,
// else "interrupted by signal N".
std::string DescribeLauncherSignal(int signal, const std::string& sender);

}  // namespace accel::launcher

#endif  // ACCEL_LAUNCHER_PROCESS_SIGNALS_H_
