# Unit tests of the launcher's configuration half (launcher/config_targets.cmake).
if(TARGET accel_launcher_config)
  foreach(test config_loader_test config_resolve_test config_scheduler_test cli_test
          config_questionnaire_test config_env_report_test)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${test}.cc)
      accel_add_test(NAME ${test} LABEL unit SOURCES ${CMAKE_CURRENT_LIST_DIR}/${test}.cc
                     LIBS accel_launcher_config)
    endif()
  endforeach()
endif()
