#!/usr/bin/env bash
# Installs the Debian packages that building and testing cairn need. Idempotent: packages that
# are already installed are skipped, and apt is not touched when nothing is missing.
# Usage: scripts/install-deps.sh            (as root, or with sudo available)
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build ccache pkg-config
  # libraries (DESIGN.md, "Dependencies")
  libboost1.81-dev nlohmann-json3-dev libsqlite3-dev libssl-dev libcli11-dev libgit2-dev
  libarchive-dev libcurl4-openssl-dev libtomlplusplus-dev libyaml-cpp-dev libsodium-dev
  # tests and benchmarks (cpp-httplib only as the stand-in package index of the env tests)
  libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev python3 python3-venv python3-pip-whl git curl wrk clang openssl
  # the slurm executor's tests run a real single-node cluster (scripts/slurm-test-cluster.sh);
  # slurm-wlm pulls in slurmctld, slurmd and slurm-client (sbatch, squeue, sacct, scancel)
  slurm-wlm slurm-client munge
  # sacct needs slurmdbd, and slurmdbd needs MySQL/MariaDB (start --accounting runs both)
  slurmdbd mariadb-server
  # the web UI's browser tests drive Debian's chromium headless (tests/e2e/)
  chromium fonts-dejavu-core
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm may come from another source than Debian; any working pair will do.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all build and test packages are present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
