// A pipeline as its author writes it (pipeline.yaml) and as cairn runs it.
//
// The spec names steps; each has a command (`run`), the steps it waits for (`needs`), the
// files and directories it reads (`inputs`) and writes (`outputs`), its own parameters,
// environment variables, Python environment, resources, retries, timeout, whether it is
// cached and which output, if any, it registers as a model version. `foreach` fans a step out into
// one instance per item. ${params.NAME} and, in a fan-out, ${item} are substituted into commands,
// paths and variables; any other ${...} is left for the shell.
//
// Reading happens in two stages, each collecting every problem instead of stopping at the
// first, so that `cairn pipeline validate` names them all at once:
//   ParsePipelineSpec: YAML to PipelineSpec, checking each field's shape;
//   ExpandPipeline:    parameters substituted, fan-outs expanded, dependencies found (an input
//                      inside another step's output depends on that step) and the whole
//                      checked: unknown `needs`, cycles (with the cycle), an input no step
//                      produces and that does not exist, two steps writing the same output,
//                      references to parameters that do not exist.
// docs/formats/pipeline.md is the reference for the format.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/data_source.h"
#include "util/status.h"

namespace cairn::pipeline {

// A parameter's value: a scalar, or a list (for `foreach`). Every scalar is kept as its text.
struct ParamValue {
  std::string scalar;
  std::vector<std::string> list;
  bool is_list = false;
  std::string ToString() const;  // the scalar, or the items joined by ","
};

struct Resources {
  double cpus = 1;         // may be fractional (0.5)
  int64_t memory_mib = 0;  // 0: not declared
  int gpus = 0;
};

struct RetryPolicy {
  int limit = 0;           // attempts after the first
  int64_t backoff_ms = 0;  // wait before the first retry; doubles for each later one
};

// `register`: when the step runs (not when its outputs come from the cache), the output at
// `path` becomes a new version of the registered model `model`, and `alias`, when given,
// moves to it.
struct Registration {
  std::string model;
  std::string path;   // one of the step's outputs, or a path inside one
  std::string alias;  // "" for none
};

// A dataset input as written: `{data: NAME[@VERSION], path: DIR}` (path optional).
// `checkpoint: DIR` or `checkpoint: {path: DIR, every: 30s}`: a directory where the step keeps
// what lets it continue (a training loop's state). Its files are stored while the step runs,
// every `every`, and when an attempt ends; a retried or resumed attempt starts with the last
// of them in place (checkpoint.h). Not part of the step's cache key.
struct Checkpoint {
  std::string path;  // StepSpec: as written; Step: normalised like an output
  int64_t every_ms = 10'000;
};

// `approve: {by: NAME}` (or `approve: NAME`): the step waits, once the steps it needs are
// done and before it starts, until the user or a member of the team NAME approves it
// (`cairn pipeline approve RUN STEP`); a rejection fails it. Not part of its cache key, and a
// step whose outputs come from the cache is not asked about.
struct Approval {
  std::string by;
};

struct DataInputSpec {
  std::string ref;
  std::string path;  // "" : data/NAME
};

struct StepSpec {
  std::string name;
  int line = 0;  // where the step starts in the file (1-based), for messages
  std::string run;
  std::vector<std::string> needs;
  std::vector<std::string> inputs;
  std::vector<DataInputSpec> data;  // the `data:` items of `inputs`
  std::vector<std::string> outputs;
  std::vector<std::string> code;                 // code paths (default: the git tree)
  std::map<std::string, ParamValue> params;      // the step's own, over the pipeline's
  std::map<std::string, std::string> variables;  // environment variables for the command
  std::string env;  // "" (the pipeline's), "project", "none", or a lock file
  Resources resources;
  RetryPolicy retries;
  int64_t timeout_ms = 0;  // 0: none
  bool cache = true;
  bool has_foreach = false;
  std::vector<std::string> foreach;  // the items, or one "${params.NAME}" to expand later
  std::optional<Registration> registration;
  std::optional<Checkpoint> checkpoint;
  std::optional<Approval> approval;
};

struct PipelineSpec {
  std::string name;
  std::map<std::string, ParamValue> params;
  std::string env;  // default for steps: "project" (the project's active environment, when it
                    // has one), "none", or a lock file
  std::vector<StepSpec> steps;  // in file order
  std::string source;           // the file, for messages
};

// Parses pipeline YAML. Problems with individual fields are appended to `problems` (each
// "steps.train.retries.limit: must be a whole number ≥ 0" or similar) and the field is
// skipped; a document that is not YAML or not a mapping returns InvalidArgument.
Result<PipelineSpec> ParsePipelineSpec(std::string_view yaml, std::string_view source,
                                       std::vector<std::string>* problems);

// "10s", "1.5m", "2h", "500ms", "1h30m" or a plain number of seconds, to milliseconds.
Result<int64_t> ParseDuration(std::string_view text);
// "512M", "4G", "4GB", "1.5GiB", "100K" or a plain number of MiB, to MiB (rounded up).
Result<int64_t> ParseMemory(std::string_view text);

// One runnable instance of a step: a step, or one item of a fan-out.
struct Step {
  std::string id;                    // the step's name, or "name[item]" in a fan-out
  std::string spec_name;             // the step it comes from
  std::string item;                  // the fan-out item ("" when none)
  std::string command;               // with parameters substituted
  std::vector<std::string> inputs;   // normalised paths relative to the pipeline's directory
  std::vector<DataInput> data;       // datasets read, each in its directory (normalised too)
  std::vector<std::string> outputs;  // the same
  std::vector<std::string> code;
  // The parameters the step's command, paths and variables use, by name, with their values:
  // a step's cache key depends on these and no others.
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> variables;
  std::string env;
  Resources resources;
  RetryPolicy retries;
  int64_t timeout_ms = 0;
  bool cache = true;
  // With parameters substituted and the path normalised like `outputs`. Not part of the
  // step's cache key: registering changes nothing the step writes.
  std::optional<Registration> registration;
  std::optional<Checkpoint> checkpoint;
  std::optional<Approval> approval;  // `by` with parameters substituted
  std::vector<size_t> deps;  // indexes of the steps this one waits for, sorted
};

struct Pipeline {
  std::string name;
  std::map<std::string, std::string> params;  // every parameter's value, after overrides
  std::vector<Step> steps;                    // in dependency order (each after its deps)
  // The step index of an id, or -1.
  int Find(std::string_view id) const;
};

// Checks whether an input path exists, relative to the pipeline's directory. Tests pass a
// fake; ExpandPipeline's callers pass one that looks at the disk.
using PathExists = bool (*)(const std::string& dir, const std::string& path);
bool PathExistsOnDisk(const std::string& dir, const std::string& path);

// Substitutes `overrides` ("name" -> "value" from -p; lists given as "a,b,c") into the
// parameters, expands the steps and checks the whole. Appends every problem to `problems`
// and returns the pipeline (possibly incomplete) either way; callers run it only when
// `problems` is empty.
Pipeline ExpandPipeline(const PipelineSpec& spec,
                        const std::map<std::string, std::string>& overrides, const std::string& dir,
                        PathExists exists, std::vector<std::string>* problems);

// The path normalised: "./a//b/../c/" -> "a/c". Empty for a path that leaves its directory
// ("../x") or is absolute: steps read and write inside the pipeline's directory.
std::string NormalisePath(std::string_view path);

}  // namespace cairn::pipeline
