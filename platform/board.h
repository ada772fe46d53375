// Board profiles: how much memory a board or card gives Whittle. The built-in profiles are
// data (platform/boards/boards.json, embedded at build time); users can load their own file
// in the same format; "detect" asks the running machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "base/status.h"

namespace wt {

struct BoardProfile {
  std::string name;            // "orin-nano-8gb"
  bool unified = true;         // CPU and GPU share one DRAM (Jetson, a CPU-only host)
  uint64_t total_bytes = 0;    // DRAM (unified) or VRAM (discrete)
  uint64_t reserve_bytes = 0;  // left to the OS, drivers and everything but Whittle
  std::string reserve_note;    // why that reserve
  double bandwidth_gbps = 0;   // peak memory bandwidth, GB/s (0: unknown)
  double fp32_tflops = 0;      // peak fp32 (0: unknown)
  double fp16_tflops = 0;      // peak fp16 (0: unknown)
  std::string figures;         // where the figures come from

  uint64_t usable_bytes() const { return total_bytes > reserve_bytes ? total_bytes - reserve_bytes : 0; }
};

// Parses a profile file: {"boards": [ {name, memory: "unified"|"discrete", total_bytes,
// reserve_bytes, ...}, ... ]} or a single profile object. WT_ERR_FORMAT naming the field.
Status parse_board_profiles(const std::string& json_text, const std::string& what, std::vector<BoardProfile>* out);
Status load_board_profiles(const std::string& path, std::vector<BoardProfile>* out);
// The profiles of platform/boards/boards.json.
const std::vector<BoardProfile>& builtin_boards();
// A built-in profile by name; WT_ERR_INVALID_ARGUMENT listing the known names otherwise.
Status find_board(const std::string& name, BoardProfile* out);

// "detect" for the host: total = MemTotal, reserve = MemTotal - MemAvailable (what is in
// use now) from /proc/meminfo. WT_ERR_UNSUPPORTED where there is no /proc/meminfo.
Status detect_host_board(BoardProfile* out);
// "detect" for a backend: a unified-memory device (Jetson, the CPU) is the host's figure —
// the GPU's own free-memory call misses what the page cache could give back; a discrete
// device is its memory_info (total, and total - free as the reserve).
Status detect_backend_board(const Backend& backend, BoardProfile* out);

}  // namespace wt
