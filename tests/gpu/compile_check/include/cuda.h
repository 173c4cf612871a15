// CUDA's driver API header, included by c10/cuda/CUDAException.h; the compile check
// (tests/gpu/compile_check) uses nothing from it.
#pragma once
#include "cuda_runtime_api.h"
