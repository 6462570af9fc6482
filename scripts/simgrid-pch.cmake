# Precompiled headers for SimGrid's library, which scripts/simgrid.sh passes to SimGrid's configure
# as CMAKE_PROJECT_INCLUDE. Why: nearly all of a SimGrid source file's compile time is its headers
# (its compile is link-time-optimisation bytecode: no code is made until the link). These four
# internal headers, one or more of which 243 of its 298 C++ files include, take about 3 s to parse
# together; 12 files drawn at random compiled in 31.7 s here, in 18.9 s with them precompiled.
#
# What the library computes does not change: the headers are its own, each include-guarded, and
# come first in every C++ file of the library, where no file defines a macro they read (xbt_misc.cpp
# does, before its first include: it goes without). A header that defines a default log category
# cannot be among them: every file defines its own, a compile error. The library's code is laid out
# a little differently (17 KB larger); simulated times are the same to the last digit (tucoll sim
# on polaris- and fugaku-calibrated, thetagpu-like and lassen-like, with either library).
include_guard(GLOBAL)

function(_tucoll_simgrid_precompiled_headers)
  set(headers <algorithm> <functional> <map> <memory> <string> <unordered_map> <vector>
      ${CMAKE_SOURCE_DIR}/src/kernel/EngineImpl.hpp ${CMAKE_SOURCE_DIR}/src/kernel/actor/ActorImpl.hpp
      ${CMAKE_SOURCE_DIR}/src/kernel/resource/NetworkModel.hpp ${CMAKE_SOURCE_DIR}/src/smpi/include/private.hpp)
  list(TRANSFORM headers REPLACE ">" "$<ANGLE-R>")
  list(TRANSFORM headers REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")  # the library has C files too
  target_precompile_headers(simgrid PRIVATE ${headers})
  set_source_files_properties(src/xbt/xbt_misc.cpp PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endfunction()

# Included at SimGrid's project(), before its targets exist: deferred to the end of its top-level
# CMakeLists.txt, by which the library's target is declared.
if(CMAKE_VERSION VERSION_LESS 3.19)  # no deferred calls: SimGrid builds as it is
  return()
endif()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _tucoll_simgrid_precompiled_headers)
