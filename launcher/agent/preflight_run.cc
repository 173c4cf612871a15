#include "launcher/agent/preflight_run.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/defaults.h"
#include "common/exit_codes.h"
#include "common/logging.h"
#include "launcher/process/os_util.h"
#include "launcher/process/subprocess.h"

namespace accel::launcher {
namespace {

constexpr char kHelperName[] = "accel-preflight";

std::vector<std::string> HelperArgv(const PreflightLaunch& launch, const std::string& out) {
  const LaunchPlan& plan = *launch.plan;
  const RendezvousResult& joined = *launch.joined;
  std::vector<std::string> argv = {
      kHelperName,
      "--rank",
      absl::StrCat(plan.machine_rank),
      "--world",
      absl::StrCat(plan.num_machines),
      "--store",
      joined.store_endpoint,
      "--namespace",
      absl::StrCat(plan.run_id, "/", joined.attempt, "/preflight"),
      "--address",
      joined.local_addr.empty() ? "127.0.0.1" : joined.local_addr,
      "--transport",
      plan.backend == "nccl" ? "nccl" : "gloo",
      "--bucket_bytes",
      absl::StrCat(defaults::kBucketBytes),
      "--link_budget_ms",
      absl::StrCat(defaults::kPreflightLinkBudget.count()),
      "--timeout_ms",
      absl::StrCat(std::chrono::milliseconds(defaults::kPreflightTimeout).count()),
      "--out",
      out};
  if (!launch.config->tls_ca_file.empty()) {
    argv.push_back("--tls_ca");
    argv.push_back(launch.config->tls_ca_file);
  }
  return argv;
}

// Waits for the helper; a signal to the launcher kills it and ends the launcher (nothing else has
// started yet).
absl::StatusOr<ExitStatus> WaitForHelper(ChildProcess& child, const SignalFd& signals) {
  const absl::Time deadline = absl::Now() + absl::FromChrono(defaults::kPreflightTimeout);
  while (!child.TryReap()) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return WaitForExit(child, absl::ZeroDuration(), "network preflight");
    }
    pollfd fds[2] = {{child.pidfd(), POLLIN, 0}, {signals.fd(), POLLIN, 0}};
    (void)::poll(fds, 2, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (fds[1].revents != 0) {
      if (const int sig = signals.Read(); sig != 0) {
        child.SignalGroup(SIGKILL);
        Notice(absl::StrCat("interrupted by signal ", sig, " during the network preflight"));
        std::_Exit(ExitCodeForSignal(sig));  // the child's owner reaps nothing more: it is killed
      }
    }
  }
  return *child.status();
}

}  // namespace

absl::StatusOr<std::string> PreflightHelperPath() {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return absl::ErrnoToStatus(errno, "network preflight: find accel-launch's directory");
  std::string dir(self, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  const std::string path = absl::StrCat(dir, "/", kHelperName);
  if (::access(path.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("network preflight: no ", kHelperName, " beside ",
                                            "accel-launch (", path, "): it is built with Gloo"));
  }
  return path;
}

absl::StatusOr<PreflightResult> RunPreflight(const PreflightLaunch& launch) {
  absl::StatusOr<std::string> helper = PreflightHelperPath();
  if (!helper.ok()) return helper.status();
  const std::string out = absl::StrCat(launch.scratch_dir, "/preflight.txt");
  ::unlink(out.c_str());
  SpawnSpec spec;
  spec.label = "network preflight";
  spec.path = *helper;
  spec.argv = HelperArgv(launch, out);
  for (std::string& e : CurrentEnvironment()) {
    if (e.rfind("ACCEL_RDZV_TOKEN=", 0) != 0) spec.env.push_back(std::move(e));
  }
  spec.env.push_back(absl::StrCat("ACCEL_RDZV_TOKEN=", launch.joined->token));
  spec.child_mask = &launch.signals->original_mask();
  absl::StatusOr<ChildProcess> child = Spawn(spec);
  if (!child.ok()) return child.status();
  absl::StatusOr<ExitStatus> exit = WaitForHelper(*child, *launch.signals);
  if (!exit.ok()) return exit.status();
  if (!exit->ok()) {
    return absl::UnavailableError(
        absl::StrCat("network preflight: ", kHelperName, " ended with ", DescribeExit(*exit)));
  }
  std::ifstream in(out);
  std::ostringstream text;
  text << in.rdbuf();
  std::optional<PreflightResult> result = DecodePreflight(text.str());
  if (!result.has_value()) {
    return absl::DataLossError(absl::StrCat("network preflight: cannot read ", out));
  }
  return *std::move(result);
}

bool ReportPreflight(const PreflightResult& result, const Config& config, int machine_rank) {
  const std::vector<SlowLink> slow = FindSlowLinks(result, config.preflight_threshold);
  if (machine_rank == 0) {
    NoticeBlock(
        absl::StrCat(kLogPrefix, FormatPreflight(result, slow, config.preflight_threshold)));
  } else {
    std::vector<std::string> names;
    for (const SlowLink& s : slow) names.push_back(absl::StrCat(s.from, "->", s.to));
    Notice(absl::StrCat(
        "network preflight: ", result.links.size(), " links measured; ",
        slow.empty() ? "none slow" : absl::StrCat("slow: ", absl::StrJoin(names, ", ")),
        " (machine 0 prints the matrix)"));
  }
  if (!slow.empty() && config.strict) {
    Notice(absl::StrCat("network preflight: ", slow.size(),
                        " slow links and strict is set: nothing was launched"));
    return false;
  }
  return true;
}

}  // namespace accel::launcher
