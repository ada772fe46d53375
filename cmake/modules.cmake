# The library's modules (cmake/modules.txt): one object library per folder, whittle_<name>,
# that sees only its own folder, its dependencies' folders and include/, so an #include
# against the documented direction fails to compile ("No such file"). A module's folder is
# reachable through a view: <build>/include-views/<name>/<folder> is a link to the source
# folder, and the view root is the module's include directory, passed on to the modules
# that link it. Sources use root-relative includes ("backends/backend.h"); an include
# relative to the file ("../x.h") would bypass the views, and scripts/check-deps.py refuses
# it. The static library whittle is the objects of every module.
#
# whittle_module_flags: what every module compiles with (the build's definitions, the
# headers of Threads, Vulkan and CUDA); objects are not linked, so these carry no libraries
# into the modules.
add_library(whittle_module_flags INTERFACE)
target_compile_definitions(whittle_module_flags INTERFACE WHITTLE_BUILD)
target_include_directories(whittle_module_flags INTERFACE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(whittle_module_flags INTERFACE Threads::Threads)

set(WT_MODULES "")
set(WT_EXE_MODULE_DEPS "")
file(STRINGS ${PROJECT_SOURCE_DIR}/cmake/modules.txt WT_MODULE_LINES REGEX "^[a-z]")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/modules.txt)
foreach(line IN LISTS WT_MODULE_LINES)
  string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
  list(GET fields 0 name)
  list(GET fields 1 folder)
  set(deps "")
  list(LENGTH fields n_fields)
  if(n_fields GREATER 2)
    list(SUBLIST fields 2 -1 deps)
  endif()
  if(name MATCHES "^exe:")
    continue()  # programs: their CMakeLists link whittle_<dep>_headers
  endif()
  set(view ${PROJECT_BINARY_DIR}/include-views/${name})
  get_filename_component(parent ${view}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT EXISTS ${view}/${folder})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${view}/${folder} SYMBOLIC)
  endif()
  # Headers only (for programs that read a module's internals, e.g. whittle-plan).
  add_library(whittle_${name}_headers INTERFACE)
  target_include_directories(whittle_${name}_headers INTERFACE ${view})
  target_link_libraries(whittle_${name}_headers INTERFACE whittle_module_flags)
  add_library(whittle_${name} OBJECT)
  target_link_libraries(whittle_${name} PUBLIC whittle_${name}_headers)
  foreach(dep IN LISTS deps)
    if(NOT TARGET whittle_${dep}_headers)
      message(FATAL_ERROR "cmake/modules.txt: module ${name} depends on ${dep}, which is not listed above it")
    endif()
    target_link_libraries(whittle_${name}_headers INTERFACE whittle_${dep}_headers)
  endforeach()
  set(WT_MODULE_FOLDER_${name} ${folder})
  list(APPEND WT_MODULES ${name})
endforeach()
