# accel_warnings(target): the project's warning set, errors under ACCEL_WERROR.
function(accel_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Woverloaded-virtual)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(ACCEL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
