# GPARITY_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on everything gparity compiles
# (the `asan` preset; CI runs the whole test suite under it: docs/reliability.md, "Sanitizers in
# CI").
# LibTorch, Qt, protobuf and the other Debian libraries stay uninstrumented: ASan still checks
# every byte gparity's code touches and every allocation (its allocator and interceptors are
# process-wide). The sanitizers' options and suppressions (tests/sanitizers/, each with its
# reason) reach the tests through the asan test preset's environment (CMakePresets.json);
# GPARITY_TEST_ENV_PRELOAD is for the tests that run an uninstrumented interpreter.
option(GPARITY_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer (gcc or clang)" OFF)

set(GPARITY_TEST_ENV_PRELOAD "")

if(GPARITY_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "GPARITY_SANITIZE needs gcc or clang (found ${CMAKE_CXX_COMPILER_ID})")
  endif()
  if(GPARITY_STATIC_CLI)
    # ASan's runtime is a shared library with gcc; a static PIE cannot have it.
    message(FATAL_ERROR "GPARITY_SANITIZE needs GPARITY_STATIC_CLI=OFF (the asan preset sets it)")
  endif()
  # Every UBSan finding stops the program (not merely printed, so a test cannot pass past one);
  # frame pointers give ASan's fast unwinder whole stacks.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=address,undefined;-fno-sanitize-recover=undefined;-fno-omit-frame-pointer>")
  add_link_options(-fsanitize=address,undefined)

  # /usr/bin/python3 is not linked with the sanitizer runtimes, but loads gparity's instrumented
  # torchops library: the runtimes are preloaded (ASan's first, as it requires). Leak checking
  # is off in that process tree: CPython and torch keep their allocations at exit by design.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(_preload "")
    foreach(_lib asan ubsan)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_lib}.so
                      OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE)
      get_filename_component(_path "${_path}" REALPATH)
      list(APPEND _preload "${_path}")
    endforeach()
    list(JOIN _preload ":" _preload)
    set(GPARITY_TEST_ENV_PRELOAD "LD_PRELOAD=${_preload}"
        "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:strict_string_checks=1")
  endif()
endif()
