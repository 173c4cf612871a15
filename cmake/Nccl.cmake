# accel_find_nccl(): finds the CUDA toolkit and NCCL (no GPU needed to build). Sets, in the
# caller's scope, ACCEL_NCCL_FOUND and the cache entries ACCEL_NCCL_INCLUDE_DIR and
# ACCEL_NCCL_LIBRARY. The NCCL that LibTorch itself loads comes first (pip torch:
# site-packages/nvidia/nccl, reached from site-packages/torch/share/cmake/Torch), so one process
# never maps two different NCCLs. Used by libaccel and by accel-preflight.
function(accel_find_nccl)
  find_package(CUDAToolkit QUIET)
  set(_accel_nccl_hints $ENV{NCCL_ROOT} $ENV{NCCL_HOME})
  if(Torch_DIR)
    list(PREPEND _accel_nccl_hints ${Torch_DIR}/../../../../nvidia/nccl)
  endif()
  list(APPEND _accel_nccl_hints /usr/local/cuda)
  find_path(ACCEL_NCCL_INCLUDE_DIR nccl.h HINTS ${_accel_nccl_hints} PATH_SUFFIXES include)
  find_library(ACCEL_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_accel_nccl_hints}
               PATH_SUFFIXES lib lib64)
  if(CUDAToolkit_FOUND AND ACCEL_NCCL_INCLUDE_DIR AND ACCEL_NCCL_LIBRARY)
    set(ACCEL_NCCL_FOUND TRUE PARENT_SCOPE)
  else()
    set(ACCEL_NCCL_FOUND FALSE PARENT_SCOPE)
  endif()
  set(CUDAToolkit_FOUND ${CUDAToolkit_FOUND} PARENT_SCOPE)
endfunction()
