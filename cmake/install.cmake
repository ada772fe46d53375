# Install: whittle.h (and the parts it includes, include/whittle/), the static library (and
# libwhittle.so with WHITTLE_SHARED=ON), the CMake package (whittleConfig.cmake, version
# file, exported targets whittle::*) and whittle.pc. Included from the top-level
# CMakeLists.txt after the library is complete.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/whittle)
set(WT_INSTALL_TARGETS whittle)
if(WHITTLE_SHARED)
  list(APPEND WT_INSTALL_TARGETS whittle_shared)
endif()
install(TARGETS ${WT_INSTALL_TARGETS} EXPORT whittleTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/whittle.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The parts whittle.h includes by their path beside it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/whittle DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT whittleTargets NAMESPACE whittle:: DESTINATION ${WT_CMAKE_DIR})

set(WT_USES_MIMALLOC OFF)
if(TARGET mimalloc AND WHITTLE_MIMALLOC)
  set(WT_USES_MIMALLOC ON)
endif()
foreach(flag WHITTLE_VULKAN WHITTLE_CUDA WHITTLE_SHARED)  # TRUE/FALSE for the config file
  if(${flag})
    set(${flag} TRUE)
  else()
    set(${flag} FALSE)
  endif()
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/whittleConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/whittleConfig.cmake INSTALL_DESTINATION ${WT_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/whittleConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/whittleConfig.cmake ${PROJECT_BINARY_DIR}/whittleConfigVersion.cmake
        DESTINATION ${WT_CMAKE_DIR})

# pkg-config: the static library's private dependencies (C++ runtime included, so that a C
# program links it with `pkg-config --static --libs whittle`).
set(WT_PC_BACKENDS cpu)
set(WT_PC_LIBS_PRIVATE "")
if(WHITTLE_VULKAN)
  string(APPEND WT_PC_BACKENDS " vulkan")
  string(APPEND WT_PC_LIBS_PRIVATE " -lvulkan")
endif()
if(WHITTLE_CUDA)
  string(APPEND WT_PC_BACKENDS " cuda")
  # cuBLAS is not linked: the CUDA backend opens it with dlopen (backends/cuda/cublas_library.h).
  string(APPEND WT_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -ldl")
endif()
if(WT_USES_MIMALLOC)
  string(APPEND WT_PC_LIBS_PRIVATE " -lmimalloc")
endif()
string(APPEND WT_PC_LIBS_PRIVATE " -lstdc++ -lm -pthread")
string(STRIP "${WT_PC_LIBS_PRIVATE}" WT_PC_LIBS_PRIVATE)
file(RELATIVE_PATH WT_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(${PROJECT_SOURCE_DIR}/cmake/whittle.pc.in ${PROJECT_BINARY_DIR}/whittle.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/whittle.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
