// Fuzz target for the pipeline spec (pipeline/spec.h): any YAML is read into a spec with its
// problems listed, or refused, never a crash.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> problems;
  (void)cairn::pipeline::ParsePipelineSpec(text, "fuzz.yaml", &problems);
  (void)cairn::pipeline::ParseDuration(text);
  (void)cairn::pipeline::ParseMemory(text);
  return 0;
}
