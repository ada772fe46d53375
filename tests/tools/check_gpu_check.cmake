# ctest gpu_check_dry_run: scripts/gpu-check.sh on a machine without a GPU (issue 23).
#   cmake -DBASH=bash -DSCRIPT=scripts/gpu-check.sh -DOUT=<scratch dir> -P check_gpu_check.cmake
# 1. No nvidia-smi (WT_GPU_CHECK_NVIDIA_SMI names a file that does not exist, so this holds on
#    a GPU machine too), no dry run: exit 2, "no NVIDIA GPU (nvidia-smi not found)", nothing
#    configured.
# 2. --dry-run with nvidia-smi's line of an H100 in WT_GPU_CHECK_FAKE_GPU: exit 0; the plan
#    configures for sm_90 with CUDA on, runs the parity suite, the model tests, the
#    compute-sanitizer run and whittle-bench on CUDA; report.md has the step table; no
#    build directory is made.
# 3. A Jetson Orin's compute capability 8.7 plans -DCMAKE_CUDA_ARCHITECTURES=87.
# 4. A compute capability that is not one: exit 2, asking for --arch.
foreach(v BASH SCRIPT OUT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_gpu_check.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
set(no_smi "WT_GPU_CHECK_NVIDIA_SMI=${OUT}/no-such-nvidia-smi")

function(run_check name expect_rc fake)
  set(args ${ARGN})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ${no_smi} "WT_GPU_CHECK_FAKE_GPU=${fake}"
                          "${BASH}" "${SCRIPT}" "${OUT}/${name}" --build "${OUT}/${name}-build" ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(all "${out}${err}")
  if(NOT rc STREQUAL "${expect_rc}")
    message(FATAL_ERROR "${name}: exit status ${rc}, expected ${expect_rc}; output:\n${all}")
  endif()
  if(EXISTS "${OUT}/${name}-build")
    message(FATAL_ERROR "${name}: made the build directory ${OUT}/${name}-build (nothing may run)")
  endif()
  set(output "${all}" PARENT_SCOPE)
endfunction()

function(expect name text)
  string(FIND "${output}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: the output lacks \"${text}\"; output:\n${output}")
  endif()
endfunction()

# 1. No GPU.
run_check(no-gpu 2 "")
expect(no-gpu "no NVIDIA GPU (nvidia-smi not found)")
# The fake GPU is for dry runs only.
run_check(no-gpu-fake 2 "NVIDIA H100 80GB HBM3, 9.0, 580.159.04")
expect(no-gpu-fake "no NVIDIA GPU (nvidia-smi not found)")

# 2. The plan for an H100.
run_check(h100 0 "NVIDIA H100 80GB HBM3, 9.0, 580.159.04" --dry-run)
foreach(text "-DCMAKE_CUDA_ARCHITECTURES=90" "-DWHITTLE_CUDA=ON" "-DCMAKE_BUILD_TYPE=Release" "-DWHITTLE_TOOLS=ON"
             "-DWHITTLE_MIMALLOC=" "-DWHITTLE_VULKAN=" "-DWHITTLE_TESTS=" "[configure] cmake -S" "[build] cmake --build"
             "--backend cuda" "-p 512,2048,8192 -n 128 -r 3" "--method all --keep 0.1" "[bench-host] stdout_tee")
  expect(h100 "${text}")
endforeach()
# The three test steps are planned where doctest was found, else skipped with the reason.
string(FIND "${output}" "-DWHITTLE_TESTS=ON" tests_on)
if(tests_on EQUAL -1)
  expect(h100 "[parity] skipped: tests NOT built: doctest not found")
else()
  expect(h100 "[parity] ctest --test-dir")
  expect(h100 "-L parity")
  expect(h100 "[model-tests] ctest")
  expect(h100 "[compute-sanitizer] ctest")
endif()
if(NOT EXISTS "${OUT}/h100/report.md")
  message(FATAL_ERROR "h100: no report.md in ${OUT}/h100")
endif()
file(READ "${OUT}/h100/report.md" report)
foreach(text "NVIDIA H100 80GB HBM3" "CMAKE_CUDA_ARCHITECTURES=90" "| step | status | time s | notes | log |"
             "| configure | planned |" "Dry run")
  string(FIND "${report}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "h100: report.md lacks \"${text}\":\n${report}")
  endif()
endforeach()

# 3. --quick and a Jetson's compute capability.
run_check(orin 0 "Orin (nvgpu), 8.7, 540.4.0" --dry-run --quick)
expect(orin "-DCMAKE_CUDA_ARCHITECTURES=87")
expect(orin "-p 512 -n 32 -r 1")

# 4. No compute capability.
run_check(bad-cc 2 "NVIDIA Mystery, [N/A], 580.0" --dry-run)
expect(bad-cc "pass --arch NN")
message(STATUS "gpu-check: no-GPU refusal, dry-run plans for sm_90 and sm_87, and the bad-capability refusal as expected")
