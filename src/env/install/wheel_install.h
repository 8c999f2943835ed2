// Installing an unpacked wheel (see wheel_archive.h) into a virtual environment, following the
// binary distribution format's "spread" step and the recording-installed-projects spec.
//
// The unpacked directory is a cache shared by every environment, so it is never written to.
// Files that are installed unchanged are linked from it (a reflink, else a hard link, else a
// copy); everything an environment needs of its own is a new file: scripts whose `#!python`
// shebang is rewritten to the environment's interpreter, console/GUI launchers generated from
// entry_points.txt, INSTALLER, REQUESTED, direct_url.json (PEP 610) and RECORD, rewritten to
// list every installed file with its sha256 and size.
//
// Hard links share their inode with the cache: writing into an installed file in place (not
// replacing it) would change the cache and every environment linked to it. Reflinks do not
// have this problem; kAuto tries them first.
//
// Bytecode is not compiled, and nothing is fsynced: the environment store makes the finished
// environment durable (syncfs) before it publishes it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "env/install/venv_layout.h"
#include "util/status.h"

namespace cairn::env {

enum class LinkMode {
  kAuto,      // reflink (FICLONE), else hard link, else copy; falls back once per install
  kReflink,   // reflink or fail (FailedPrecondition)
  kHardlink,  // hard link or fail (FailedPrecondition), e.g. across filesystems
  kCopy,      // always copy
};
std::string_view LinkModeName(LinkMode mode);

struct InstallOptions {
  LinkMode link = LinkMode::kAuto;
  std::string installer = "cairn";  // first line of INSTALLER
  bool requested = false;           // write REQUESTED (the user asked for this distribution)
  std::string direct_url_json;      // written as direct_url.json when not empty (PEP 610)
};

struct InstallReport {
  size_t files_linked = 0;     // taken from the cache by reflink or hard link
  size_t files_copied = 0;     // taken from the cache by copying
  size_t files_written = 0;    // generated for this environment (scripts, metadata, RECORD)
  size_t scripts_written = 0;  // of those: launchers and rewritten `#!python` scripts
  // How files were linked from the cache: the weakest mode any file needed (kCopy when even
  // one could not be linked). Copies made only to add execute bits to a script do not count.
  // kCopy when nothing was taken from the cache.
  LinkMode used = LinkMode::kCopy;
  std::string dist_info;              // absolute path of the installed .dist-info directory
  std::vector<std::string> warnings;  // from the wheel (e.g. a newer minor Wheel-Version)
};

// Installs the unpacked wheel at `unpacked_dir` into `layout`:
// - root files go to purelib (Root-Is-Purelib: true) or platlib; each `<name>-<ver>.data/<key>/`
//   tree goes to the path of scheme <key> (purelib, platlib, scripts, data, headers); any
//   other key, or a file directly in the .data directory, is InvalidArgument;
// - in the scripts scheme, a first line starting with `#!python` (also `#!pythonw`) becomes
//   the environment's bin/python (keeping any arguments), and scripts are made executable;
// - each [console_scripts] and [gui_scripts] entry point `name = module:attr` gets a launcher
//   in bin/ that imports the module, resolves the dotted attribute, calls it and exits with
//   its result;
// - shebangs are `#!<prefix>/bin/python`, or a /bin/sh trampoline when that path has a space
//   or the line would exceed 127 bytes (the kernel's limit);
// - INSTALLER, REQUESTED and direct_url.json (as asked) replace any copy in the wheel, and
//   RECORD lists every installed file, generated ones included, sorted, with paths relative to
//   site-packages ("../../../bin/tool" for scripts), RECORD itself without hash and size.
//   RECORD.jws / RECORD.p7s are not installed: they sign the wheel's RECORD, which is replaced.
//
// Refuses (AlreadyExists) to install over an existing file, naming the distribution whose
// RECORD lists it, and refuses a distribution whose .dist-info directory already exists. On
// any error the files this call created are removed again (directories it created may stay).
//
// Thread-safe: different wheels may be installed into the same environment at once. Errors
// name the wheel (its .dist-info stem) and the path; no exception escapes.
Result<InstallReport> InstallWheel(const std::string& unpacked_dir, const VenvLayout& layout,
                                   const InstallOptions& options);

// A console or GUI script entry point.
struct ScriptEntryPoint {
  std::string name;    // the command's file name in bin/
  std::string module;  // dotted module path
  std::string attr;    // dotted attribute path within the module
  bool gui = false;
};

// The [console_scripts] and [gui_scripts] entries of an entry_points.txt (INI with '='
// delimiters and case-sensitive names; `[extras]` are ignored). Other sections are skipped.
// InvalidArgument, naming the line, for a malformed line, a name that is not a plain file name,
// a reference without ":attr", or module/attribute parts that are not identifiers.
Result<std::vector<ScriptEntryPoint>> ParseScriptEntryPoints(std::string_view text);

// The shebang (with its newline) that runs `python`: "#!<python>\n", or the /bin/sh trampoline
// (see above) when needed. `args` (e.g. " -u") follow the interpreter. InvalidArgument when the
// path holds a newline, or a backslash where the trampoline is needed.
Result<std::string> ShebangFor(const std::string& python, std::string_view args = "");

}  // namespace cairn::env
