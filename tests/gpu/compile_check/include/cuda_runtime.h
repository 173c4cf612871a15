// The CUDA runtime API for the compile check (tests/gpu/compile_check): see cuda_runtime_api.h.
#pragma once
#include "cuda_runtime_api.h"
