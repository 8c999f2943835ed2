#include "env/install/venv_layout.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "util/file.h"
#include "util/process.h"

namespace cairn::env {
namespace {

namespace fs = std::filesystem;

constexpr int kProbeSeconds = 60;
constexpr size_t kMaxProbeOutput = 1 << 20;

// Follows the marker on its own line, so that whatever a sitecustomize or .pth file prints
// cannot be taken for the answer. Paths are written as raw bytes (os.fsencode).
constexpr std::string_view kMarker = "cairn-venv-probe";
constexpr char kProbeScript[] = R"PY(
import os, sys, sysconfig
exe = getattr(sys, "_base_executable", "") or sys.executable
v = sys.version_info
gil_disabled = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
lines = [b"", b"cairn-venv-probe", os.fsencode(os.path.realpath(exe)),
         ("%d.%d.%d" % (v[0], v[1], v[2])).encode(), sys.implementation.name.encode(),
         b"free-threaded" if gil_disabled else b"gil", b""]
sys.stdout.flush()
sys.stdout.buffer.write(b"\n".join(lines))
sys.stdout.flush()
)PY";

std::string LibPythonDir(const VenvLayout& l) {
  return "python" + std::to_string(l.python_major) + "." + std::to_string(l.python_minor);
}

// A Python string literal for pyvenv.cfg's `prompt` line (venv writes repr(prompt)).
std::string PythonRepr(std::string_view s) {
  char quote =
      s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == '\\' || c == quote) out.push_back('\\');
    out.push_back(c);
  }
  out.push_back(quote);
  return out;
}

std::string PromptName(const VenvLayout& l) {
  if (!l.prompt.empty()) return l.prompt;
  return fs::path(l.home()).lexically_normal().filename().string();
}

// Creates `link` pointing at `target`, or accepts it when it already does.
Status EnsureSymlink(const std::string& target, const fs::path& link) {
  if (::symlink(target.c_str(), link.c_str()) == 0) return Status::Ok();
  if (errno != EEXIST) return ErrnoStatus("symlink", link);
  std::error_code ec;
  fs::path existing = fs::read_symlink(link, ec);
  if (ec) {
    return FailedPrecondition(link.string() + " exists and is not a symlink to " + target);
  }
  if (existing.string() != target) {
    return FailedPrecondition(link.string() + " points to " + existing.string() + ", not " +
                              target);
  }
  return Status::Ok();
}

Status CheckPrefix(const std::string& prefix) {
  if (prefix.empty() || prefix.front() != '/') {
    return InvalidArgument("environment prefix must be absolute: \"" + prefix + "\"");
  }
  if (prefix.find(':') != std::string::npos) {
    return InvalidArgument("environment prefix " + prefix + " contains ':', the PATH separator");
  }
  if (prefix.find('\n') != std::string::npos) {
    return InvalidArgument("environment prefix contains a newline");
  }
  return Status::Ok();
}

}  // namespace

std::string VenvLayout::purelib() const {
  return (fs::path(prefix) / "lib" / LibPythonDir(*this) / "site-packages").string();
}

std::string VenvLayout::scripts() const { return (fs::path(prefix) / "bin").string(); }

std::string VenvLayout::headers(std::string_view dist) const {
  return (fs::path(prefix) / "include" / "site" / LibPythonDir(*this) / std::string(dist)).string();
}

std::string VenvLayout::env_python() const {
  return (fs::path(home()) / "bin" / "python").string();
}

std::string PyvenvCfgText(const VenvLayout& l) {
  std::string version = l.python_version.empty() ? std::to_string(l.python_major) + "." +
                                                       std::to_string(l.python_minor) + ".0"
                                                 : l.python_version;
  std::string cfg;
  cfg += "home = " + fs::path(l.python).parent_path().string() + "\n";
  cfg += "include-system-site-packages = false\n";
  cfg += "version = " + version + "\n";
  if (!l.prompt.empty()) cfg += "prompt = " + PythonRepr(l.prompt) + "\n";
  cfg += "executable = " + l.python + "\n";
  // The venv command that makes the same layout; tools read `command` to learn how an
  // environment was made.
  cfg += "command = " + l.python + " -m venv --without-pip";
  if (!l.prompt.empty()) cfg += " --prompt=\"" + l.prompt + "\"";
  cfg += " " + l.home() + "\n";
  return cfg;
}

std::string ActivateScriptText(const VenvLayout& l) {
  std::string prompt = ShellQuote("(" + PromptName(l) + ") ");
  std::string s;
  s += "# Source this file from a POSIX shell (\". bin/activate\"); running it does nothing\n";
  s += "# useful. Written by cairn; the variable names are venv's, so tools that know venvs\n";
  s += "# (and a deactivate from another venv) understand it.\n";
  s += R"SH(
deactivate () {
    if [ -n "${_OLD_VIRTUAL_PATH+set}" ]; then
        PATH="$_OLD_VIRTUAL_PATH"
        export PATH
        unset _OLD_VIRTUAL_PATH
    fi
    if [ -n "${_OLD_VIRTUAL_PYTHONHOME+set}" ]; then
        PYTHONHOME="$_OLD_VIRTUAL_PYTHONHOME"
        export PYTHONHOME
        unset _OLD_VIRTUAL_PYTHONHOME
    fi
    if [ -n "${_OLD_VIRTUAL_PS1+set}" ]; then
        PS1="$_OLD_VIRTUAL_PS1"
        export PS1
        unset _OLD_VIRTUAL_PS1
    fi
    unset VIRTUAL_ENV
    unset VIRTUAL_ENV_PROMPT
    # bash and zsh remember where they found commands; make them look again.
    if [ -n "${BASH:-}" ] || [ -n "${ZSH_VERSION:-}" ]; then
        hash -r 2>/dev/null
    fi
    if [ "${1:-}" != "nondestructive" ]; then
        unset -f deactivate
    fi
}

# Leave any environment that is active now.
deactivate nondestructive

)SH";
  s += "VIRTUAL_ENV=" + ShellQuote(l.home()) + "\n";
  s += R"SH(export VIRTUAL_ENV

_OLD_VIRTUAL_PATH="$PATH"
PATH="$VIRTUAL_ENV/bin:$PATH"
export PATH

# PYTHONHOME would point the interpreter away from the environment.
if [ -n "${PYTHONHOME+set}" ]; then
    _OLD_VIRTUAL_PYTHONHOME="$PYTHONHOME"
    unset PYTHONHOME
fi

if [ -z "${VIRTUAL_ENV_DISABLE_PROMPT:-}" ]; then
    _OLD_VIRTUAL_PS1="${PS1:-}"
)SH";
  s += "    PS1=" + prompt + "\"${PS1:-}\"\n";
  s += "    export PS1\n";
  s += "    VIRTUAL_ENV_PROMPT=" + prompt + "\n";
  s += R"SH(    export VIRTUAL_ENV_PROMPT
fi

if [ -n "${BASH:-}" ] || [ -n "${ZSH_VERSION:-}" ]; then
    hash -r 2>/dev/null
fi
)SH";
  return s;
}

Status CreateVenvLayout(const VenvLayout& layout) {
  CAIRN_RETURN_IF_ERROR(CheckPrefix(layout.prefix));
  if (layout.python.empty() || layout.python.front() != '/') {
    return InvalidArgument("base interpreter must be an absolute path: \"" + layout.python + "\"");
  }
  struct stat st;
  if (::stat(layout.python.c_str(), &st) != 0) {
    return ErrnoStatus("base interpreter", layout.python);
  }
  fs::path prefix(layout.prefix);
  CAIRN_RETURN_IF_ERROR(MakeDirs(layout.scripts()));
  CAIRN_RETURN_IF_ERROR(MakeDirs(layout.purelib()));
  CAIRN_RETURN_IF_ERROR(MakeDirs(prefix / "include" / LibPythonDir(layout)));  // as venv does
#if !defined(__APPLE__)
  // As venv does on 64-bit POSIX (bpo-21197): distributions whose platlib is lib64 (Fedora,
  // SUSE) land in the same site-packages.
  if (sizeof(void*) == 8) CAIRN_RETURN_IF_ERROR(EnsureSymlink("lib", prefix / "lib64"));
#endif
  fs::path bin(layout.scripts());
  std::string major = "python" + std::to_string(layout.python_major);
  std::string minor = LibPythonDir(layout);
  CAIRN_RETURN_IF_ERROR(EnsureSymlink(layout.python, bin / "python"));
  CAIRN_RETURN_IF_ERROR(EnsureSymlink("python", bin / major));
  CAIRN_RETURN_IF_ERROR(EnsureSymlink("python", bin / minor));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(prefix / "pyvenv.cfg", PyvenvCfgText(layout)));
  CAIRN_RETURN_IF_ERROR(WriteFileAtomic(bin / "activate", ActivateScriptText(layout)));
  return Status::Ok();
}

Result<VenvLayout> VenvLayoutFor(const std::string& prefix, const std::string& python) {
  if (python.empty()) return InvalidArgument("no Python interpreter given");
  std::error_code ec;
  fs::path abs = fs::absolute(prefix, ec);
  if (ec) return InvalidArgument("cannot make " + prefix + " absolute: " + ec.message());
  std::string abs_prefix = abs.lexically_normal().string();
  while (abs_prefix.size() > 1 && abs_prefix.back() == '/') abs_prefix.pop_back();
  CAIRN_RETURN_IF_ERROR(CheckPrefix(abs_prefix));

  SpawnOptions options;
  // -I: isolated (no user site, no PYTHON* variables, no current directory on sys.path);
  // -B: write no bytecode.
  options.argv = {python, "-I", "-B", "-c", kProbeScript};
  CaptureLimits limits;
  limits.timeout = std::chrono::seconds(kProbeSeconds);
  limits.max_output = limits.max_error_output = kMaxProbeOutput;
  Result<CapturedRun> run = RunAndCapture(std::move(options), limits);
  if (!run.ok()) {
    return Status(run.status().code(),
                  "cannot run Python interpreter " + python + ": " + run.status().message());
  }
  if (run->timed_out) {
    return Unavailable("Python interpreter " + python + " did not answer within " +
                       std::to_string(kProbeSeconds) + " s");
  }
  const ExitStatus& exit = run->exit;
  if (exit.signaled || exit.code != 0) {
    StatusCode code = !exit.signaled && exit.code == 127 ? StatusCode::kNotFound
                                                         : StatusCode::kFailedPrecondition;
    return Status(code, "Python interpreter " + python + " failed (" + exit.ToString() +
                            "): " + run->error_output.substr(0, 2000));
  }
  std::string out = "\n" + run->output;
  size_t at = out.rfind("\n" + std::string(kMarker) + "\n");
  std::vector<std::string> lines;
  if (at != std::string::npos) {
    size_t pos = at + kMarker.size() + 2;
    while (lines.size() < 4) {
      size_t nl = out.find('\n', pos);
      if (nl == std::string::npos) break;
      lines.push_back(out.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  if (lines.size() != 4) {
    return FailedPrecondition("Python interpreter " + python + " gave no usable answer");
  }
  VenvLayout layout;
  layout.prefix = abs_prefix;
  layout.python = lines[0];
  layout.python_version = lines[1];
  if (std::sscanf(lines[1].c_str(), "%d.%d", &layout.python_major, &layout.python_minor) != 2 ||
      layout.python.empty() || layout.python.front() != '/') {
    return FailedPrecondition("Python interpreter " + python + " gave no usable answer");
  }
  if (lines[2] != "cpython") {
    return Unimplemented("cannot lay out a venv for " + lines[2] + " (" + python +
                         "); only CPython is supported");
  }
  if (lines[3] != "gil") {
    return Unimplemented("cannot lay out a venv for the free-threaded build " + python);
  }
  return layout;
}

std::vector<std::pair<std::string, std::string>> ActivationVariables(const std::string& prefix) {
  const char* path = std::getenv("PATH");
  return {{"PATH", prefix + "/bin" + (path != nullptr ? ":" + std::string(path) : "")},
          {"VIRTUAL_ENV", prefix},
          {"PYTHONHOME", ""}};
}

}  // namespace cairn::env
