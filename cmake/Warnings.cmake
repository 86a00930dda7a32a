# Warning flags shared by every gparity target.
function(gparity_target_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow=local -Wno-missing-field-initializers>)
  endif()
endfunction()

# Test code is compiled at -O1 where the build optimises at -O2 (RelWithDebInfo): about a quarter
# less compile time for the test units (docs/building.md), while the libraries under test keep
# the build's own flags. -O1, not -O0: the suites parse and hash sample files through inlined
# header code, and run in about the same time.
function(gparity_test_optimisation target)
  target_compile_options(${target} PRIVATE $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:CXX>>:-O1>)
endfunction()
