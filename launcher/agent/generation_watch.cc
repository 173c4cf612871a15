#include "launcher/agent/generation_watch.h"

namespace accel::launcher {

void GenerationWatch::Open(const RendezvousResult& joined) {
  Close();
  OpenExchanges(joined);
}

void GenerationWatch::OpenExchanges(const RendezvousResult& joined) {
  if (rendezvous_ == nullptr) return;
  if (hang_timeout_ > absl::ZeroDuration()) {
    job_ = rendezvous_->OpenJobProgress(joined, hang_timeout_);
  }
  StatusLaunch launch = launch_;
  launch.joined = &joined;
  status_ = StartStatus(launch);
}

Regroup GenerationWatch::MoveTo(const RendezvousResult& joined) {
  Close();
  OpenExchanges(joined);
  Regroup next;
  next.base_rank = joined.base_rank;
  next.job = job_.get();
  next.observer = this;  // the supervisor announces every running worker again (Started)
  return next;
}

void GenerationWatch::Close() {
  status_.reset();  // stops publishing the status and erases the status line
  job_.reset();     // stops publishing the progress
}

void GenerationWatch::Started(const WorkerLaunch& worker, pid_t pid) {
  if (status_ != nullptr) status_->Started(worker, pid);
}

void GenerationWatch::Exited(int rank, const ExitStatus& status) {
  if (status_ != nullptr) status_->Exited(rank, status);
}

void GenerationWatch::WorkersStopping() {
  if (status_ != nullptr) status_->WorkersStopping();
}

}  // namespace accel::launcher
