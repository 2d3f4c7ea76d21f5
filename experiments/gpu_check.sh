#!/bin/sh
# The device machine's one line (docs/devices.md, "The GPU check"): no TensorFlow there.
# Installs the carried wheels (runs/wheels: Keras 3.15.1 and its dependencies, pytest), then runs
# `python -m experiments.gpu_check` under JAX on the carried IMDB file; results go to $OUT/gpu (else results/gpu).
# Extra arguments go to gpu_check.py (e.g. --parts bench --lengths 1024).
set -e
if [ ! -d runs/wheels ]; then
  echo "gpu_check.sh: error: no runs/wheels folder: carry the wheels docs/devices.md (The GPU check) downloads." >&2
  exit 2
fi
python -m pip install -q --no-index --find-links runs/wheels keras==3.15.1 pytest
KERAS_BACKEND=jax python -m experiments.gpu_check --prepared runs/backends/imdb512.npz --out "${OUT:-results}/gpu" "$@"
