#version 450
// For each row of x[rows, n] the indices of its k = i0 largest values (ties: lower index
// first; NaN ranks below every number, -0 ties with +0), ascending, to out[r * k ..) in the
// readback ring; slots past n get -1. One workgroup per row, O(n) per row, no scratch memory:
// the radix select of kernels/cuda/topk.cu.
//
// Each value becomes a 32-bit key whose unsigned order is the CPU's order. Four passes of 8
// bits histogram the keys that match the prefix chosen so far and pick the byte that holds
// the kk-th largest: the threshold key T, and `need`, how many keys equal to T belong to the
// top kk (all keys above T do). A last pass walks the row in index order in chunks of the
// workgroup: one shared-memory scan of (above T, equal to T) per chunk places every key above
// T and the first `need` keys equal to T, so the output is ascending.
//
// The first version compared every pair (O(n^2) per row); past ~4k keys llvmpipe's loop
// limiter cut its inner loop short, most likely (4000 keys passed, 8300 came back wrong).
// ne0 = n, ne1 = x ne1 (3-D rows: (r % ne1, r / ne1)), ne2 = rows.
#include "common.glsl"

layout(binding = 1) readonly buffer X { float x[]; };
layout(binding = 4) writeonly buffer Out { int result[]; };

shared uint hist[256];
shared uint scan[256];  // the workgroup is at most 256 invocations (the backend's wg_size)
shared uint s_prefix, s_need;

uint order_key(float v) {
  uint u = floatBitsToUint(v);
  if (isnan(v)) return 0u;           // NaN ranks below every number
  if (u == 0x80000000u) u = 0u;      // -0 ties with +0
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

void main() {
  const uint r = group_id();
  if (r >= p.ne2) return;
  const uint t = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint n = p.ne0, k = uint(p.i0);
  const uint kk = min(k, n);
  const uint row = p.o_s0 + (r % p.ne1) * p.s0_nb1 + (r / p.ne1) * p.s0_nb2;
  const uint out0 = p.o_aux + r * k;
  if (kk == n) {
    for (uint i = t; i < n; i += wg) result[out0 + i] = int(i);
  } else {
    uint prefix = 0u, mask = 0u, need = kk;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (uint b = t; b < 256u; b += wg) hist[b] = 0u;
      barrier();
      for (uint i = t; i < n; i += wg) {
        const uint key = order_key(x[row + i]);
        if ((key & mask) == prefix) atomicAdd(hist[(key >> uint(shift)) & 255u], 1u);
      }
      barrier();
      if (t == 0u) {
        // From the top bin down to the one where `need` is reached.
        uint above = 0u;
        for (int b = 255; b >= 0; --b) {
          const uint h = hist[b];
          if (above + h >= need) {
            s_prefix = prefix | (uint(b) << uint(shift));
            s_need = need - above;
            break;
          }
          above += h;
        }
      }
      barrier();
      prefix = s_prefix;
      need = s_need;
      mask |= 255u << uint(shift);
      barrier();  // s_prefix, s_need and hist are rewritten by the next pass
    }
    // Keys above T are all kept; keys equal to T while fewer than `need` came before.
    uint kept = 0u, eq_seen = 0u;
    for (uint c0 = 0u; c0 < n; c0 += wg) {
      const uint i = c0 + t;
      const uint key = i < n ? order_key(x[row + i]) : 0u;
      const uint is_above = (i < n && key > prefix) ? 1u : 0u;
      const uint is_eq = (i < n && key == prefix) ? 1u : 0u;
      // Inclusive scan (Hillis-Steele) of both counts at once: above in the low 16 bits,
      // equal in the high (a chunk holds at most 256 of each).
      const uint mine = is_above | (is_eq << 16);
      scan[t] = mine;
      barrier();
      for (uint off = 1u; off < wg; off <<= 1) {
        const uint add = t >= off ? scan[t - off] : 0u;
        barrier();
        scan[t] += add;
        barrier();
      }
      const uint excl = scan[t] - mine, total = scan[wg - 1u];
      const uint eq_left = need - min(need, eq_seen);  // equal keys still to keep
      const uint above_before = excl & 0xFFFFu, eq_before = excl >> 16;
      if (is_above != 0u || (is_eq != 0u && eq_before < eq_left))
        result[out0 + kept + above_before + min(eq_before, eq_left)] = int(i);
      kept += (total & 0xFFFFu) + min(total >> 16, eq_left);
      eq_seen += total >> 16;
      barrier();  // scan is rewritten by the next chunk
    }
  }
  for (uint s = n + t; s < k; s += wg) result[out0 + s] = -1;
}
