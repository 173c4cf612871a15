# Finds LibTorch (Debian's libtorch-dev, or any LibTorch on CMAKE_PREFIX_PATH) and defines
# accel::torch, an interface target with its include dirs, flags and libraries. LibTorch's own
# TORCH_CXX_FLAGS carry the ABI flag that must match.
find_package(Torch REQUIRED)
add_library(accel_torch INTERFACE)
target_link_libraries(accel_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(accel_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
separate_arguments(_accel_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(accel_torch INTERFACE ${_accel_torch_flags})
add_library(accel::torch ALIAS accel_torch)

# ACCEL_TORCH_CUDA: 1 when this LibTorch has CUDA. A CUDA LibTorch (1.13 and 2.x, pip wheels
# included) imports both torch_cuda and c10_cuda from its Caffe2Targets.cmake; a CPU one neither.
if(TARGET torch_cuda)
  set(ACCEL_TORCH_CUDA 1)
else()
  set(ACCEL_TORCH_CUDA 0)
endif()

# A LibTorch built with the old C++ ABI (pip wheels before 2.7: -D_GLIBCXX_USE_CXX11_ABI=0)
# needs every C++ target that passes std::string across a library boundary to agree, including
# GoogleTest built from source in the worker-only build: apply LibTorch's flags directory-wide there.
if(ACCEL_WORKER_ONLY AND TORCH_CXX_FLAGS)
  add_compile_options(${_accel_torch_flags})
endif()
