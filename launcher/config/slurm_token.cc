#include "launcher/config/slurm_token.h"

#include <fcntl.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "launcher/config/pmi2_client.h"

namespace accel::launcher {
namespace {

constexpr char kContext[] = "exchange the rendezvous token over Slurm's PMI-2";

bool IsToken(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

absl::StatusOr<int> ReadFd(const std::string& text) {
  int fd = -1;
  if (!absl::SimpleAtoi(text, &fd) || fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("PMI_FD='", text, "' is not a descriptor"));
  }
  if (::fcntl(fd, F_GETFD) < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("PMI_FD=", fd,
                     " is not open in this process (start accel-launch from srun itself, or "
                     "through a shell that keeps inherited descriptors)"));
  }
  return fd;
}

// Task 0 puts a fresh token; everyone fences, then reads it.
absl::StatusOr<std::string> Exchange(Pmi2Client& pmi, absl::Time deadline) {
  if (pmi.rank() == 0) {
    ACCEL_ASSIGN_OR_RETURN(std::string fresh, RandomHex(32));
    ACCEL_RETURN_IF_ERROR(pmi.Put(kSlurmTokenKey, fresh, deadline));
  }
  absl::Status fenced = pmi.Fence(deadline);
  if (absl::IsDeadlineExceeded(fenced)) {
    return Annotate(fenced,
                    absl::StrCat("not every task of the step reached the exchange (", pmi.size(),
                                 " tasks; did each one start accel-launch with the "
                                 "same num_machines?)"));
  }
  ACCEL_RETURN_IF_ERROR(fenced);
  ACCEL_ASSIGN_OR_RETURN(std::optional<std::string> token, pmi.Get(kSlurmTokenKey, deadline));
  if (!token.has_value()) {
    return absl::FailedPreconditionError("task 0 of the step put no token");
  }
  if (!IsToken(*token)) {
    return absl::FailedPreconditionError("the step's token is not 64 hex characters");
  }
  return *token;
}

}  // namespace

absl::StatusOr<std::optional<SchedulerToken>> SlurmStepToken(const EnvLookup& env,
                                                             absl::Time deadline) {
  const std::optional<std::string> job = env("SLURM_JOB_ID");
  const std::optional<std::string> pmi_fd = env("PMI_FD");
  if (!job.has_value() || !pmi_fd.has_value()) return std::optional<SchedulerToken>();
  const std::string step = env("SLURM_STEP_ID").value_or("?");
  int rank = 0;
  if (!absl::SimpleAtoi(env("PMI_RANK").value_or("0"), &rank) || rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kContext, ": PMI_RANK='", env("PMI_RANK").value_or(""), "' is not a rank"));
  }
  absl::StatusOr<int> fd = ReadFd(*pmi_fd);
  if (!fd.ok()) return Annotate(fd.status(), kContext);
  const std::string jobid = env("PMI_JOBID").value_or(absl::StrCat(*job, ".", step));
  absl::StatusOr<Pmi2Client> pmi = Pmi2Client::Create(UniqueFd(*fd), jobid, rank, deadline);
  if (!pmi.ok()) return Annotate(pmi.status(), kContext);
  absl::StatusOr<std::string> token = Exchange(*pmi, deadline);
  if (!token.ok()) return Annotate(token.status(), kContext);
  if (absl::Status done = pmi->Finalize(deadline); !done.ok()) return Annotate(done, kContext);
  SchedulerToken out;
  out.token = *std::move(token);
  out.source = absl::StrCat("Slurm PMI-2 (job ", *job, " step ", step, ", task ", pmi->rank(),
                            " of ", pmi->size(), ")");
  return std::optional<SchedulerToken>(std::move(out));
}

}  // namespace accel::launcher
