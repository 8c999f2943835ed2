// Runs fuzz targets without libFuzzer, so that every build tests them: `cairn_fuzz_replay
// TARGET [FILE|DIR]... [--random N]` feeds the target each file named on the command line (or
// found in a named directory) once, then N inputs made by mutating them with a fixed seed. All
// targets are linked in, each under its own name (fuzz/CMakeLists.txt). A target reports a problem by crashing (abort, a sanitizer), which
// fails the test. Built with clang and -DCAIRN_FUZZ=ON, the same targets link libFuzzer instead
// (DEVELOPING.md, "Fuzzing").
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#define FUZZ_TARGET(name) extern "C" int name##_TestOneInput(const uint8_t* data, size_t size);
#include "fuzz_targets.inc"
#undef FUZZ_TARGET

namespace {

using TestOneInput = int (*)(const uint8_t* data, size_t size);

struct Target {
  const char* name;
  TestOneInput run;
};

constexpr Target kTargets[] = {
#define FUZZ_TARGET(name) {#name, name##_TestOneInput},
#include "fuzz_targets.inc"
#undef FUZZ_TARGET
};

using Input = std::vector<uint8_t>;

Input ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Input(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t Next(uint64_t& s) {  // xorshift64*
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ULL;
}

// One of a few edits: flip a byte, insert or delete a run, splice two inputs, repeat a piece.
Input Mutate(const std::vector<Input>& corpus, uint64_t& s) {
  static const char kTokens[] = "0123456789-=, bytes\t";
  Input in = corpus[Next(s) % corpus.size()];
  const int edits = 1 + static_cast<int>(Next(s) % 6);
  for (int e = 0; e < edits; ++e) {
    const size_t at = in.empty() ? 0 : Next(s) % (in.size() + 1);
    switch (Next(s) % 5) {
      case 0:
        if (!in.empty()) in[at % in.size()] = static_cast<uint8_t>(Next(s));
        break;
      case 1:
        in.insert(in.begin() + static_cast<ptrdiff_t>(at),
                  static_cast<uint8_t>(kTokens[Next(s) % (sizeof(kTokens) - 1)]));
        break;
      case 2:
        if (at < in.size()) in.erase(in.begin() + static_cast<ptrdiff_t>(at));
        break;
      case 3: {
        const Input& other = corpus[Next(s) % corpus.size()];
        in.insert(in.begin() + static_cast<ptrdiff_t>(at), other.begin(), other.end());
        break;
      }
      default: {
        Input copy(in.begin() + static_cast<ptrdiff_t>(at), in.end());
        in.insert(in.end(), copy.begin(), copy.end());
        break;
      }
    }
    if (in.size() > 4096) in.resize(4096);
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  TestOneInput run_one = nullptr;
  const std::string target = argc > 1 ? argv[1] : "";
  for (const Target& t : kTargets) {
    if (target == t.name) run_one = t.run;
  }
  if (run_one == nullptr) {
    std::fprintf(stderr, "usage: %s TARGET [FILE|DIR]... [--random N]; targets:", argv[0]);
    for (const Target& t : kTargets) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  std::vector<Input> corpus;
  long random = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--random" && i + 1 < argc) {
      random = std::strtol(argv[++i], nullptr, 10);
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) corpus.push_back(ReadAll(entry.path()));
      }
    } else {
      corpus.push_back(ReadAll(arg));
    }
  }
  if (corpus.empty()) corpus.push_back({});
  for (const Input& in : corpus) run_one(in.data(), in.size());
  uint64_t seed = 0x9E3779B97F4A7C15ULL;
  for (long i = 0; i < random; ++i) {
    Input in = Mutate(corpus, seed);
    run_one(in.data(), in.size());
  }
  // A crash never gets here; the line has the shape of every suite's closing line.
  std::printf("%s_fuzz: %ld passed, 0 failed (%zu corpus inputs, %ld mutations)\n", target.c_str(),
              static_cast<long>(corpus.size()) + random, corpus.size(), random);
  return 0;
}
