#!/usr/bin/env bash
# status_test.sh --python for an HF accelerate script (tests/testing/hf_accelerate_train.py:
# accelerate 0.20.3's Accelerator, gradient accumulation, unchanged): 2 machines x 2 ranks in
# namespaces; status --json lists 4 ranks stepping (steps/s > 0), the live line shows the step,
# a slowed rank is named. accelerate is not a Debian package and PyPI is unreachable here, so it
# comes from outside the repository (tests/testing/hf_accelerate.sh: ACCEL_HF_ACCELERATE, else
# ~/.cache/accel-launch/accelerate-0.20.3); without it the test skips with that reason, also under CI (it is
# not something CI provides, like a GPU).
# Usage: hf_accelerate_status_test.sh <accel-launch> <train.bin>
set -euo pipefail
here=$(dirname "$0")
source "$here/../../testing/skip.sh"
source "$here/../../testing/hf_accelerate.sh"
accelerate=$(hf_accelerate_dir 0.20.3 2>&1) || skip_not_provided "$accelerate"
echo "accelerate 0.20.3 from $accelerate"
# The workers inherit the launcher's environment (the launcher puts its progress module before
# this PYTHONPATH; with --use_cpu it sets ACCELERATE_USE_CPU, so accelerate picks MULTI_CPU).
export PYTHONPATH=$accelerate${PYTHONPATH:+:$PYTHONPATH}
exec "$here/status_test.sh" "$1" "$2" --python "$here/../../testing/hf_accelerate_train.py"
