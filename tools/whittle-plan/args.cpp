// whittle-plan's command line (args.h).
#include "args.h"

#include <cstdio>
#include <string>
#include <utility>

#include "tools/common/flags.h"
#include "tools/common/prune_methods.h"
#include "tools/common/rope_flags.h"

namespace wt_plan {

void usage(FILE* out, const char* argv0) {
  std::fprintf(out,
               "usage: %s --board NAME|detect [--board-file FILE] --model GGUF|MODEL.json --ctx N\n"
               "          [--new N] [--method METHOD] [--keep R] [--prune-param KEY=VALUE]...\n"
               "          [--backend cpu|vulkan|cuda] [-t THREADS] [--logits-all] [--json OUT]\n"
               "          [--kv-device-blocks N] [--kv-block T] [--pager-copy] [--kv-type f32|f16|q8_0]\n"
               "          [--batch-rows N] [--rope-scaling none|linear|yarn] [--rope-scale F] [--yarn-orig-ctx N]\n"
               "       %s --list-boards [--board-file FILE]\n"
               "  --board       a built-in profile (platform/boards/boards.json), one from\n"
               "                --board-file, or detect (this machine's available memory)\n"
               "  --model       a GGUF file (exact tensor types) or a description without\n"
               "                weights (platform/models/*.json)\n"
               "  --ctx         context rows: prompt + generated\n"
               "  --new         generated tokens (default 256); the prompt is ctx - new\n"
               "  --method      %s\n"
               "                (default full; whittle-run --list-methods says what each does)\n"
               "  --keep        the method's keep ratio (default 0.1)\n"
               "  --backend     default cpu (Jetson boards: cuda for the GPU); a device backend\n"
               "                plans f32 activations, as it runs\n"
               "  -t            CPU threads (their workspace is planned; default all cores)\n"
               "  --kv-device-blocks  the KV pager's device pool in blocks (default 0: no pager)\n"
               "  --kv-block    tokens per pager block (default 64)\n"
               "  --pager-copy  on a unified board, plan the copying pager (device pool + host\n"
               "                pool) instead of the pager in place (one pool of every block)\n"
               "  --kv-type     the KV cache's type (default f16: half f32's KV bytes; q8_0: 0.27)\n"
               "  --batch-rows  prompt rows that go through the model at once: the activations\n"
               "                are planned for this many rows (a pruned or paged prompt's\n"
               "                x, k and v for all of them; default 0: %d, or where that does\n"
               "                not fit the board, the most rows in steps of 64 that fit, as a\n"
               "                context lowers it; --ffn-rows: the same)\n"
               "  --beyond-train-ctx  plan (and solve for) a context past the model's training\n"
               "                context; without it such a --ctx is refused and the solved\n"
               "                context stops there\n"
               "%s"
               "exit status: 0 fits, 1 does not fit, 2 bad arguments or input\n",
               argv0, argv0, wt_tools::prune_method_list().c_str(), WT_BATCH_ROWS_DEFAULT, wt_tools::kRopeFlagsUsage);
}

bool parse_args(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  wt_tools::Flags f(argc, argv);
  while (f.next()) {
    if (f.is("--board")) {
      if (!f.text(&o->board)) return false;
    } else if (f.is("--board-file")) {
      if (!f.text(&o->board_file)) return false;
    } else if (f.is("--model", "-m")) {
      if (!f.text(&o->model)) return false;
    } else if (f.is("--ctx", "-c")) {
      if (!f.whole(1, 1 << 20, &o->n_ctx)) return false;
    } else if (f.is("--new", "-n")) {
      if (!f.whole(0, 1 << 20, &o->n_new)) return false;
    } else if (f.is("--kv-device-blocks")) {
      if (!f.whole(0, 1 << 24, &o->kv_device_blocks)) return false;
    } else if (f.is("--kv-type")) {
      if (!f.kv_type(&o->kv_type)) return false;
    } else if (f.is("--pager-copy")) {
      o->kv_pager_copy = true;
    } else if (f.is("--batch-rows") || f.is("--ffn-rows")) {
      if (!f.whole(0, 1 << 20, &o->n_batch_rows)) return false;
    } else if (f.is("--kv-block")) {
      if (!f.whole(1, 4096, &o->kv_block_tokens)) return false;
    } else if (f.is("-t", "--threads")) {
      if (!f.whole(0, wt_tools::kMaxThreads, &o->n_threads)) return false;
    } else if (f.is("--method", "--prune")) {
      if (!f.text(&o->method)) return false;
    } else if (f.is("--keep")) {
      double keep = 0;
      if (!f.number(&keep)) return false;
      if (!(keep > 0.0 && keep <= 1.0)) return wt_tools::Flags::fail("--keep must be a number in (0, 1]");
      o->keep = static_cast<float>(keep);
    } else if (f.is("--prune-param")) {
      std::pair<std::string, std::string> kv;
      if (!f.key_value(&kv)) return false;
      o->prune_params.push_back(kv);
    } else if (f.is("--backend")) {
      if (!f.backend(&o->backend)) return false;
      o->backend_set = true;
    } else if (f.is("--logits-all")) {
      o->logits_all = true;
    } else if (f.is("--beyond-train-ctx")) {
      o->beyond_train_ctx = true;
    } else if (wt_tools::is_rope_flag(f.flag())) {
      if (!f.rope(&o->load)) return false;
    } else if (f.is("--json")) {
      if (!f.text(&o->json)) return false;
    } else if (f.is("--list-boards")) {
      o->list = true;
    } else if (f.is("-h", "--help")) {
      *help = true;
      return true;
    } else {
      return wt_tools::Flags::fail("unknown argument '" + f.flag() + "'");
    }
  }
  if (o->list) return true;
  if (std::string error; !wt_tools::check_rope_flags(o->load, &error)) return wt_tools::Flags::fail(error);
  if (o->board.empty() || o->model.empty() || o->n_ctx == 0) {
    std::fprintf(stderr, "error: --board, --model and --ctx are required\n");
    return false;
  }
  if (o->n_new >= o->n_ctx) {
    std::fprintf(stderr, "error: --new %d must be below --ctx %d\n", o->n_new, o->n_ctx);
    return false;
  }
  return true;
}


}  // namespace wt_plan
