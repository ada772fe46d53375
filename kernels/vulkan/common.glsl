// Shared by every kernel: the workgroup size (specialization constant 0, chosen by the
// backend from the device caps) and the push-constant block, which must match struct Push
// in backends/vulkan/pipeline.h. Offsets and strides are in units of each binding's view.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_16bit_storage : enable

layout(local_size_x_id = 0) in;
// Specialization constants 1 and 2 (struct Spec in backends/vulkan/pipeline.h), for kernels
// that read them: every weight block starts on a multiple of kWAlign bytes (dequant.glsl),
// and a matmul tile holds kTileRows activation rows (1 for a decode step). Kernels with
// constants of their own declare them from 3 on (attention_lane.comp 3 and 4, matmul.comp 5).
layout(constant_id = 1) const uint kWAlign = 1u;
layout(constant_id = 2) const uint kTileRows = 4u;

layout(push_constant) uniform PushBlock {
  uint o_dst, o_s0, o_s1, o_s2, o_aux;
  uint ne0, ne1, ne2, ne3;
  uint dst_nb1, dst_nb2, s0_nb1, s0_nb2, s1_nb1, s1_nb2, s2_nb1, s2_nb2;
  int i0, i1, i2, i3;
  float f0, f1, f2, f3;
  uint n_ids, flags;
} p;

// Grids wider than maxComputeWorkGroupCount[0] spill into y; kernels see one linear index.
uint group_id() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }
uint global_id() { return group_id() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }
