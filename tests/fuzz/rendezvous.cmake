# libFuzzer target for the rendezvous request handlers (tests/fuzz/README.md). Needs clang:
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DACCEL_FUZZ=ON \
#     -DACCEL_BUILD_WORKER=OFF -DACCEL_SANITIZE=address,undefined
option(ACCEL_FUZZ "Build libFuzzer targets (clang only)" OFF)
if(ACCEL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ACCEL_FUZZ needs clang (-fsanitize=fuzzer); configure with CXX=clang++")
  endif()
  add_executable(rendezvous_fuzz ${CMAKE_CURRENT_LIST_DIR}/rendezvous_fuzz.cc)
  target_link_libraries(rendezvous_fuzz PRIVATE accel::rendezvous)
  target_include_directories(rendezvous_fuzz PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(rendezvous_fuzz PRIVATE -fsanitize=fuzzer)
  target_link_options(rendezvous_fuzz PRIVATE -fsanitize=fuzzer)
  accel_warnings(rendezvous_fuzz)
endif()
