# launch_bench: accel-launch vs torchrun launch overhead (bench/launch_bench.md).
add_executable(launch_bench ${CMAKE_CURRENT_LIST_DIR}/launch_bench.cc)
target_include_directories(launch_bench PRIVATE ${PROJECT_SOURCE_DIR})
accel_warnings(launch_bench)
target_compile_definitions(launch_bench PRIVATE
                           ACCEL_LAUNCH_PATH_DEFAULT="$<TARGET_FILE:accel-launch>"
                           ACCEL_SOURCE_DIR_DEFAULT="${PROJECT_SOURCE_DIR}")
add_dependencies(launch_bench accel-launch)
