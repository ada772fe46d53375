# Sourced (with $root set) by the scripts that configure a build: build.sh, cross-test.sh,
# fuzz.sh. Where ccache is installed (setup.sh installs it) every C and C++ compile goes
# through it, so a source compiled before with the same flags is a cache hit, also from
# another clone: CI builds five configurations of a fresh clone, each minutes on two cores.
# CCACHE_BASEDIR turns the paths under the root into relative ones and CCACHE_NOHASHDIR keeps
# the build directory out of the hash (debug builds put it there), so a clone elsewhere hits
# the same entries (the price: a hit's debug info may name the other clone's build directory
# as its compilation directory). A hit is the compiler's own earlier output for the same
# preprocessed source and flags; without ccache (or with WHITTLE_CCACHE=0) the build is the
# same, uncached.
# A header's comment is no hit in the builds with debug info (-g: ASan, TSan, the fuzzers):
# their preprocessed text keeps line numbers, so a comment that adds or drops a line in a
# header that every file includes (whittle.h, chat.h) recompiles all of them, some 30 minutes
# of CI on two cores; the Release builds (no -g) still hit (seen 2026-12-07: after chat.h's
# comments changed, the Release build hit and the ASan build compiled every test file). Most
# likely why stop 87's CI ran past its 90 minutes: such a change after the last full local run.
# nvcc too (ccache supports it): the CUDA sources are few, but their device code for two
# architectures took 3 min 13 s of test.sh's Release build on two cores (2026-12-03).
if command -v ccache >/dev/null 2>&1 && [ "${WHITTLE_CCACHE:-1}" != 0 ]; then
  compiler_cache=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
    -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
else
  compiler_cache=(-DCMAKE_C_COMPILER_LAUNCHER= -DCMAKE_CXX_COMPILER_LAUNCHER= -DCMAKE_CUDA_COMPILER_LAUNCHER=)
fi
