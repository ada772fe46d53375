#version 450
// dst[n, d] f32 = rows ids[0..n) of the table [n_vocab, d] (type by WTYPE_* define),
// dequantized, times f0 (EmbedOp::scale). One invocation per output element; a row whose id is negative is left as it
// is (a table split over bindings runs one dispatch per range of its rows).
#include "common.glsl"

layout(binding = 0) writeonly buffer Dst { float dst[]; };
#define W_BINDING 1
#include "dequant.glsl"
layout(binding = 4) readonly buffer Ids { int ids[]; };

void main() {
  const uint idx = global_id();
  if (idx >= p.ne0 * p.ne1) return;
  const uint r = idx / p.ne0, i = idx % p.ne0;
  const int id = ids[p.o_aux + r];
  if (id < 0) return;  // in another range of a table split over bindings (ops_dense.cpp)
  const uint row = p.o_s0 + uint(id) * p.s0_nb1;
  dst[p.o_dst + r * p.dst_nb1 + i] = load_w(row, i) * p.f0;
}
