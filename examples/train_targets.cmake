# The example trainer's LibTorch-free support code (flags, progress view, IDX reader).
add_library(accel_train_support STATIC
  ${CMAKE_CURRENT_LIST_DIR}/train_flags.cc
  ${CMAKE_CURRENT_LIST_DIR}/progress_view.cc
  ${CMAKE_CURRENT_LIST_DIR}/idx_reader.cc)
target_include_directories(accel_train_support PUBLIC ${PROJECT_SOURCE_DIR})
accel_warnings(accel_train_support)
