# allreduce_bench: libaccel's all-reduce (shared memory / Gloo) vs torch.distributed Gloo, with a
# memcpy floor; driven by bench/allreduce_bench.py.
if(TARGET accel_worker)
  add_executable(allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/allreduce_bench.cc)
  target_link_libraries(allreduce_bench PRIVATE accel_worker)
  accel_warnings(allreduce_bench)
endif()
