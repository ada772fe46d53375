// --resume: what an earlier --json document of the same suite contributes to this run. Apart
// from main so that fuzz/fuzz_resume.cpp checks the same code on documents it makes up.
#pragma once

#include <string>
#include <vector>

#include "bench_common.h"

namespace bench {

// Splits `doc`, an earlier --json document (`source` names it in errors), into its "machine"
// records (*machines) and "run" records (*runs) when its meta matches `now` (this run's
// base_record("meta", ...)) in model, backend, threads, suite and seed; *from = its command,
// commit and complete. False with *error otherwise. The records are only sorted here:
// run_suite checks each field of a run record before it uses it.
bool resume_records(const Json& doc, const std::string& source, const Json& now, std::vector<Json>* machines,
                    std::vector<Json>* runs, Json* from, std::string* error);

}  // namespace bench
