// Measures the machine's peak arithmetic with the run's thread count, so prefill speed can
// be given as a fraction of a compute roofline measured in the same process: fp32 FMA at
// the widest vector width the CPU has, and int8 dot products (AVX-512 VNNI) where present.
#pragma once

struct ComputePeak {
  double fp32_gflops = 0;  // 2 FLOPs per fused multiply-add lane
  double int8_gops = 0;    // 2 ops per int8 multiply-accumulate; 0 when no int8 dot unit is probed
  const char* fp32_isa = "";
  const char* int8_isa = "";
};

ComputePeak measure_compute_peak(int n_threads);
