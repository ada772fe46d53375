// Measures the machine's read bandwidth with the same thread count as the run, so a
// decode speed can be stated as a fraction of the bandwidth roofline measured in the same
// process. Reads a buffer far larger than the caches, several times; the median is used.
#pragma once

#include <cstddef>

double measure_read_bandwidth_gbs(int n_threads, size_t bytes, int repetitions);
