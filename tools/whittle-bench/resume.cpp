// --resume's document check (resume.h).
#include "resume.h"

namespace bench {

bool resume_records(const Json& doc, const std::string& source, const Json& now, std::vector<Json>* machines,
                    std::vector<Json>* runs, Json* from, std::string* error) {
  const Json* meta = doc.find("meta");
  const Json* recs = doc.find("records");
  if (!meta || meta->type() != Json::Type::object || !recs || recs->type() != Json::Type::array) {
    *error = source + ": not a whittle-bench --json document (no meta or records)";
    return false;
  }
  // rope_scaling is in a document only where --rope-scaling was given: absent in both
  // matches (the file's own scaling).
  for (const char* k : {"model", "backend", "threads", "suite", "seed", "rope_scaling"}) {
    const Json* was = meta->find(k);
    const Json* is = now.find(k);
    const bool optional = std::string(k) == "rope_scaling";
    if (optional && !was && !is) continue;
    if (!was || !is || was->dump() != is->dump()) {
      *error = source + ": its " + k + " is " + (was ? was->dump() : "missing") + ", this run's is " +
               (is ? is->dump() : "missing") +
               " (resume the same suite, model, backend, threads, seed and rope scaling)";
      return false;
    }
  }
  for (const Json& r : recs->elems()) {
    const Json* kind = r.find("kind");
    if (kind && kind->str() == "machine") machines->push_back(r);
    else if (kind && kind->str() == "run") runs->push_back(r);
  }
  Json f = Json::object();
  for (const char* k : {"command", "commit", "complete"})
    if (const Json* v = meta->find(k)) f.set(k, *v);
  *from = f;
  return true;
}

}  // namespace bench
