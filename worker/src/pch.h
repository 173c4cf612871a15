// Precompiled header of libaccel's LibTorch-heavy sources (target_precompile_headers): parsing
// these once instead of per file saves ~20 s per translation unit.
#ifndef ACCEL_WORKER_PCH_H_
#define ACCEL_WORKER_PCH_H_

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/optimizer.h>

#endif  // ACCEL_WORKER_PCH_H_
