// The shape of a model as the planner needs it: hyperparameters and the type and shape of
// every weight tensor (data may be null), from a loaded GGUF or from a description without
// weights (platform/models/*.json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "base/status.h"

namespace wt {

struct ModelShape {
  std::string name;
  Hparams hp;
  std::vector<LayerWeights> layers;  // [n_layer]; the matrices' type and shape
  Tensor tok_embd;                   // [n_vocab, n_embd]
  Tensor output;                     // [n_vocab, n_embd] (tok_embd when tied)
  uint64_t weight_bytes = 0;         // every tensor the model places (tied output counted once)
  uint64_t n_params = 0;
  bool described = false;            // from a description (types assumed), not a file
};

// From a loaded model: its hparams, tensor views and weight_bytes.
ModelShape model_shape_from_model(const Model& model);

// A description: {"name", "arch": "llama"|"qwen2"|"qwen3"|"smollm3", "n_layer", "n_embd", "n_ff", "n_head",
// "n_head_kv", "head_dim" (default n_embd / n_head), "n_vocab", "n_ctx_train",
// "tied_output", "weight_type" (the layer matrices), "output_type", "embed_type" (default
// weight_type; "F32", "F16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", ...)}. Weight bytes follow from
// the block sizes of kernels/dtype.h. WT_ERR_FORMAT naming the field.
Status parse_model_description(const std::string& json_text, const std::string& what, ModelShape* out);
Status load_model_description(const std::string& path, ModelShape* out);

}  // namespace wt
