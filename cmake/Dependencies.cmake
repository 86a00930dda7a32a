# Finds gparity's dependencies and decides which optional parts are built. Every optional part
# defaults to "on if what it needs was found"; gparity_print_summary() says what is on and why.

option(GPARITY_BUILD_TESTS "Build the test suite" ON)
option(GPARITY_BUILD_BENCH "Build the benchmarks" ON)
option(GPARITY_BUILD_FUZZ "Build libFuzzer targets (needs clang)" OFF)

# Required, everywhere.
# xxHash: Debian's libxxhash-dev. Where only the header is present (the GPU machine, which gets a
# carried copy of xxhash.h), xxHash is compiled inline from that header.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
find_library(XXHASH_LIBRARY xxhash)
if(NOT XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found: install libxxhash-dev (scripts/setup.sh)")
endif()
add_library(gparity_xxhash INTERFACE)
target_include_directories(gparity_xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})
if(XXHASH_LIBRARY)
  target_link_libraries(gparity_xxhash INTERFACE ${XXHASH_LIBRARY})
else()
  target_compile_definitions(gparity_xxhash INTERFACE XXH_INLINE_ALL)
endif()
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Protobuf REQUIRED)
# minizip (libminizip-dev, zlib's contrib): .pt2 archives and torch.save records with deflated
# members (core/model/formats/zip_archive.hpp says why not libzip).
find_path(GPARITY_MINIZIP_INCLUDE_DIR minizip/unzip.h REQUIRED)
find_library(GPARITY_MINIZIP_LIBRARY minizip REQUIRED)
find_package(ZLIB REQUIRED)
add_library(gparity_minizip INTERFACE IMPORTED)
target_include_directories(gparity_minizip INTERFACE ${GPARITY_MINIZIP_INCLUDE_DIR})
# expat (libexpat1-dev): NCCL graph XML (core/model/formats/nccl_graph.cpp).
# CMake's FindEXPAT module, not expat's own config: the config names the library by its absolute
# install path (/lib/x86_64-linux-gnu/libexpat.so.1.x), which a carried sysroot does not have.
find_package(EXPAT 2.2 MODULE REQUIRED)
# libdeflate: CRC-32 with PCLMULQDQ for zip members read in place (zlib's is ~1 GB/s).
find_path(GPARITY_LIBDEFLATE_INCLUDE_DIR libdeflate.h REQUIRED)
find_library(GPARITY_LIBDEFLATE_LIBRARY deflate REQUIRED)
add_library(gparity_libdeflate INTERFACE IMPORTED)
target_include_directories(gparity_libdeflate INTERFACE ${GPARITY_LIBDEFLATE_INCLUDE_DIR})
target_link_libraries(gparity_libdeflate INTERFACE ${GPARITY_LIBDEFLATE_LIBRARY})

# The light `gparity` executable starts in a fraction of the time when libstdc++ and the libraries
# Debian also ships as archives are linked in statically: most of a dynamic start is the loader
# resolving libstdc++ and libprotobuf symbols (6.2 ms -> 2.7 ms for `gparity --version` here, on
# a command that is run once per file in scripts; 1.2 ms as the static PIE that cli/CMakeLists.txt
# links when every archive is found). Only targets with the property
# GPARITY_STATIC_DEPS get the archives; gparity-run, the tests and anything that shares a process
# with LibTorch (which brings its own libprotobuf) keep the shared libraries.
option(GPARITY_STATIC_CLI "Link the gparity executable with static libstdc++ and dependency archives" ON)
# gparity_static_or_shared(VAR SHARED ARCHIVE_NAME): VAR becomes SHARED, or the archive for
# targets that set GPARITY_STATIC_DEPS, where the archive exists.
function(gparity_static_or_shared var shared archive)
  string(MAKE_C_IDENTIFIER "GPARITY_ARCHIVE_${archive}" cache)
  find_library(${cache} NAMES ${archive})
  if(GPARITY_STATIC_CLI AND ${cache})
    set(${var} "$<IF:$<BOOL:$<TARGET_PROPERTY:GPARITY_STATIC_DEPS>>,${${cache}},${shared}>" PARENT_SCOPE)
  else()
    set(${var} "${shared}" PARENT_SCOPE)
    set_property(GLOBAL APPEND PROPERTY GPARITY_MISSING_ARCHIVES ${archive})
  endif()
endfunction()
if(XXHASH_LIBRARY)
  gparity_static_or_shared(_gparity_xxhash_link "${XXHASH_LIBRARY}" libxxhash.a)
  set_property(TARGET gparity_xxhash PROPERTY INTERFACE_LINK_LIBRARIES "${_gparity_xxhash_link}")
endif()
gparity_static_or_shared(_gparity_deflate_link "${GPARITY_LIBDEFLATE_LIBRARY}" libdeflate.a)
set_property(TARGET gparity_libdeflate PROPERTY INTERFACE_LINK_LIBRARIES "${_gparity_deflate_link}")
gparity_static_or_shared(GPARITY_EXPAT_LINK EXPAT::EXPAT libexpat.a)
gparity_static_or_shared(_gparity_minizip_link "${GPARITY_MINIZIP_LIBRARY}" libminizip.a)
gparity_static_or_shared(_gparity_zlib_link ZLIB::ZLIB libz.a)
set_property(TARGET gparity_minizip PROPERTY INTERFACE_LINK_LIBRARIES "${_gparity_minizip_link};${_gparity_zlib_link}")
gparity_static_or_shared(GPARITY_CRYPTO_LINK OpenSSL::Crypto libcrypto.a)
gparity_static_or_shared(GPARITY_PROTOBUF_LINK protobuf::libprotobuf libprotobuf.a)

if(GPARITY_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(GPARITY_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

set(_gparity_reasons "")
macro(_gparity_reason text)
  list(APPEND _gparity_reasons "${text}")
endmacro()

# --- LibTorch -------------------------------------------------------------------------------
# CPU machines: Debian's libtorch-dev (1.13) + libgloo-dev. GPU machine: the LibTorch inside the
# pip wheel; point Torch_DIR or CMAKE_PREFIX_PATH at `torch.utils.cmake_prefix_path`.
if(NOT DEFINED GPARITY_WITH_TORCH OR GPARITY_WITH_TORCH)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    # The GPU machine's LibTorch lives inside the pip wheel: ask its python3 where.
    find_program(GPARITY_PYTHON3 python3)
    if(GPARITY_PYTHON3)
      execute_process(
        COMMAND ${GPARITY_PYTHON3} -c "import torch; print(torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
        RESULT_VARIABLE _torch_rc)
      if(_torch_rc EQUAL 0 AND _torch_prefix)
        find_package(Torch QUIET PATHS ${_torch_prefix} NO_DEFAULT_PATH)
      endif()
    endif()
  endif()
endif()
if(Torch_FOUND)
  set(_torch_default ON)
  _gparity_reason("LibTorch: found ${Torch_VERSION} at ${Torch_DIR}")
else()
  set(_torch_default OFF)
  _gparity_reason("LibTorch: not found (install libtorch-dev, or set Torch_DIR)")
endif()
option(GPARITY_WITH_TORCH "Build the LibTorch runtime (core/runtime, core/torchops)" ${_torch_default})
if(GPARITY_WITH_TORCH AND NOT Torch_FOUND)
  message(FATAL_ERROR "GPARITY_WITH_TORCH=ON but LibTorch was not found")
endif()

# --- Qt 6 -----------------------------------------------------------------------------------
find_package(Qt6 QUIET COMPONENTS Widgets Charts Test Concurrent)
if(Qt6_FOUND AND Qt6Widgets_FOUND AND Qt6Charts_FOUND AND Qt6Test_FOUND)
  set(_gui_default ON)
  _gparity_reason("Qt 6: found ${Qt6_VERSION} (Widgets, Charts, Test)")
else()
  set(_gui_default OFF)
  _gparity_reason("Qt 6: not found (install qt6-base-dev qt6-charts-dev)")
endif()
option(GPARITY_WITH_GUI "Build gparity-view (Qt 6)" ${_gui_default})
if(GPARITY_WITH_GUI AND NOT _gui_default)
  message(FATAL_ERROR "GPARITY_WITH_GUI=ON but Qt 6 Widgets/Charts/Test were not found")
endif()

# --- CUDA -----------------------------------------------------------------------------------
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
if(NOT DEFINED GPARITY_WITH_CUDA OR GPARITY_WITH_CUDA)
  check_language(CUDA)
endif()
if(CMAKE_CUDA_COMPILER)
  set(_cuda_default ON)
  _gparity_reason("CUDA: nvcc at ${CMAKE_CUDA_COMPILER}")
else()
  set(_cuda_default OFF)
  _gparity_reason("CUDA: no nvcc (looked in /usr/local/cuda and PATH)")
endif()
option(GPARITY_WITH_CUDA "Build the CUDA hash kernel" ${_cuda_default})
if(GPARITY_WITH_CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  # CMake 3.25 knows no C++20 flag for nvcc; the kernels need only C++17.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
endif()

function(gparity_print_summary)
  message(STATUS "")
  message(STATUS "gparity configuration")
  message(STATUS "  build type            ${CMAKE_BUILD_TYPE}")
  message(STATUS "  ccache                ${GPARITY_CCACHE}")
  message(STATUS "  GPARITY_WITH_TORCH    ${GPARITY_WITH_TORCH}")
  message(STATUS "  GPARITY_WITH_CUDA     ${GPARITY_WITH_CUDA}")
  message(STATUS "  GPARITY_WITH_GUI      ${GPARITY_WITH_GUI}")
  message(STATUS "  tests / bench / fuzz  ${GPARITY_BUILD_TESTS} / ${GPARITY_BUILD_BENCH} / ${GPARITY_BUILD_FUZZ}")
  foreach(r IN LISTS _gparity_reasons)
    message(STATUS "  - ${r}")
  endforeach()
  message(STATUS "")
endfunction()
