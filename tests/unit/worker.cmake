# libaccel unit tests (no sockets, no peers): bucket plan, options, error file, loss scaler,
# sampler/loader.
if(TARGET accel_worker)
  accel_add_test(NAME worker_core_test LABEL unit TIMEOUT 60
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/worker_bucket_plan_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/worker_error_file_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/worker_options_test.cc
    LIBS accel_worker)
  accel_add_test(NAME worker_runtime_test LABEL unit TIMEOUT 60
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/worker_accelerator_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/worker_grad_sync_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/worker_loss_scaler_test.cc
            ${CMAKE_CURRENT_LIST_DIR}/worker_sampler_test.cc
    LIBS accel_worker)
endif()
