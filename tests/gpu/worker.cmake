# libaccel on a GPU (label gpu). Built everywhere (also by the worker-only build on the GPU
# machine); each test skips with the reason when no GPU or no CUDA LibTorch is present.
# common/device_info.cc is compiled in directly: the worker-only build has no accel_common.
if(TARGET accel_worker)
  accel_add_test(NAME worker_gpu_test LABEL gpu TIMEOUT 300
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/worker_gpu_test.cc ${PROJECT_SOURCE_DIR}/common/device_info.cc
    LIBS accel_worker ${CMAKE_DL_LIBS})
  target_compile_definitions(worker_gpu_test PRIVATE ACCEL_HAVE_NCCL=${ACCEL_HAVE_NCCL})
endif()
# Without a GPU every case skips: CTest then reports the test as skipped, not passed.
if(TARGET worker_gpu_test)
  set_tests_properties(worker_gpu_test PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
endif()
