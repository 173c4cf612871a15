# The example trainer's LibTorch-free support code (flags, progress view, IDX reader, --trace).
add_library(accel_train_support STATIC
  ${CMAKE_CURRENT_LIST_DIR}/train_flags.cc
  ${CMAKE_CURRENT_LIST_DIR}/progress_view.cc
  ${CMAKE_CURRENT_LIST_DIR}/idx_reader.cc
  ${CMAKE_CURRENT_LIST_DIR}/train_trace.cc)
target_include_directories(accel_train_support PUBLIC ${PROJECT_SOURCE_DIR})
accel_warnings(accel_train_support)

# train.bin: the main job (one LibTorch translation unit).
add_executable(train_bin ${CMAKE_CURRENT_LIST_DIR}/train.cpp)
set_target_properties(train_bin PROPERTIES OUTPUT_NAME train.bin)
target_link_libraries(train_bin PRIVATE accel_worker accel_train_support)
accel_warnings(train_bin)
