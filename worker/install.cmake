# Installs libaccel as the CMake package AccelLaunch (find_package(AccelLaunch) → accel::worker)
# plus a pkg-config file (accel.pc), all in the install component "worker":
#   cmake --install <build> --component worker --prefix <dir>
include(CMakePackageConfigHelpers)
set(ACCEL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/AccelLaunch)

# The installed library finds libtorch, libgloo, libnccl and libcudart where it was linked.
set_target_properties(accel_worker PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS accel_worker EXPORT AccelLaunchTargets COMPONENT worker
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/accel
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT worker)
install(EXPORT AccelLaunchTargets NAMESPACE accel:: DESTINATION ${ACCEL_CMAKE_DIR}
        COMPONENT worker)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/AccelLaunchConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/AccelLaunchConfig.cmake INSTALL_DESTINATION ${ACCEL_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/AccelLaunchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/AccelLaunchConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/AccelLaunchConfigVersion.cmake
        DESTINATION ${ACCEL_CMAKE_DIR} COMPONENT worker)

# pkg-config: LibTorch ships no .pc file, so its flags are spelled out here.
get_filename_component(_accel_torch_libdir "${TORCH_LIBRARY}" DIRECTORY)
set(ACCEL_PC_CFLAGS "${TORCH_CXX_FLAGS}")
foreach(dir ${TORCH_INCLUDE_DIRS})
  # The compiler's own directories must not be re-added (-isystem /usr/include breaks
  # #include_next in libstdc++).
  if(NOT dir MATCHES "^/usr(/local)?/include/?$")
    string(APPEND ACCEL_PC_CFLAGS " -isystem ${dir}")
  endif()
endforeach()
set(ACCEL_PC_LIBS "-L${_accel_torch_libdir} -Wl,-rpath,${_accel_torch_libdir} -ltorch -ltorch_cpu -lc10")
if(ACCEL_TORCH_CUDA)
  string(APPEND ACCEL_PC_LIBS " -ltorch_cuda -lc10_cuda")
endif()
# Relocatable: the prefix is found relative to the .pc file itself.
file(RELATIVE_PATH ACCEL_PC_RELPREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/accel.pc.in ${CMAKE_CURRENT_BINARY_DIR}/accel.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/accel.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT worker)
