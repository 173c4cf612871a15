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
  // Started first: the clock's baseline is what the workers recorded before the new world.
  if (rendezvous_ != nullptr) {
    clock_ = std::make_unique<FirstStepClock>(joined.attempt, joined.world_size,
                                              rendezvous_->change_seen());
  }
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
  clock_.reset();
}

void GenerationWatch::Started(const WorkerLaunch& worker, pid_t pid) {
  if (status_ != nullptr) status_->Started(worker, pid);
  if (clock_ != nullptr) clock_->Add(worker.files.progress_file);
}

void GenerationWatch::Exited(int rank, const ExitStatus& status) {
  if (status_ != nullptr) status_->Exited(rank, status);
}

void GenerationWatch::WorkersStopping() {
  if (status_ != nullptr) status_->WorkersStopping();
  clock_.reset();  // a step from here on is not the new world's training
}

}  // namespace accel::launcher
