#!/usr/bin/env bash
# The Python progress module (launcher/python/) against real Python workers on 127.0.0.1, 2 ranks:
#   - a program that never imports torch sees exactly what it sees without the module (sys.path,
#     PYTHONPATH, the same sitecustomize, no torch loaded), with the system's sitecustomize and
#     with its own on PYTHONPATH (which still runs), and the same with --no_python;
#   - a DDP program's result is the same with and without the module, and with it the progress
#     file holds its optimizer steps and collectives (DDP's all-reduce per step, its parameter
#     broadcast, the closing all_reduce);
#   - nothing is printed on stderr either way; python_progress false (or ACCEL_PYTHON_PROGRESS)
#     turns it off.
# Usage: python_progress_test.sh <accel-launch> <python_probe.py>
set -euo pipefail
launcher=$1
probe=$2
py=/usr/bin/python3
source "$(dirname "$0")/../../../testing/skip.sh"
[[ -x $py ]] || skip "no $py (python3)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run NAME [launcher options...] -- program...: rank 0's JSON line into $work/NAME.json, stderr of
# every rank into $work/NAME.err (the launcher's own notices are not the workers').
run() {
  local name=$1; shift
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done; shift
  timeout -s KILL 120 "$launcher" --use_cpu --num_processes 2 --run_id "mp-py-$name-$$" \
    --log_dir "$work/logs" --tee --python "$py" "${opts[@]}" "$@" >"$work/$name.out" 2>"$work/$name.launcher" ||
    fail "$name: exit $?: $(tail -n 20 "$work/$name.out" "$work/$name.launcher")"
  sed -n 's/^\[rank 0\] //p' "$work/$name.out" | grep '^{' >"$work/$name.json" || true
  [[ -s $work/$name.json ]] || fail "$name: no JSON from rank 0: $(cat "$work/$name.out")"
  cat "$work/logs/mp-py-$name-$$"/attempt_0/rank_*/stderr.log >"$work/$name.err" 2>/dev/null || true
}
# same A B: the JSON lines are equal but for sys.meta_path, where A (the module on) may have the
# module's torch import hook first, and nothing else.
same() {
  python3 - "$work/$1.json" "$work/$2.json" <<'PY' || fail "$1 and $2 differ (above)"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
hook = a["meta_path"][:-len(b["meta_path"])] if len(a["meta_path"]) > len(b["meta_path"]) else []
a["meta_path"] = a["meta_path"][len(hook):]
if a != b or hook not in ([], ["_TorchFinder"]):
    print("with:   ", a, hook, "\nwithout:", b)
    sys.exit(1)
PY
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$work/$1.json" "$2"; }

# 1. No torch: the same start-up with the module on and off, and with --no_python.
run plain_on -- "$probe"
run plain_off --python_progress=false -- "$probe"
ACCEL_PYTHON_PROGRESS=false run plain_env_off -- "$probe"
run plain_no_python --no_python -- "$py" "$probe"
same plain_on plain_off
same plain_on plain_env_off
same plain_on plain_no_python
[[ $(field plain_on torch_loaded) == False ]] || fail "the module loaded torch"
echo "no torch: the same start-up with the module on, off and under --no_python ($(field plain_on sitecustomize))"

# 2. The program's own sitecustomize on its PYTHONPATH: it runs, as before.
mkdir -p "$work/mine"
cat >"$work/mine/sitecustomize.py" <<'PY'
import builtins
builtins.ACCEL_TEST_SITECUSTOMIZE = __file__
PY
PYTHONPATH=$work/mine run own_on -- "$probe"
PYTHONPATH=$work/mine run own_off --python_progress=false -- "$probe"
same own_on own_off
[[ $(field own_on user_sitecustomize_ran) == "$work/mine/sitecustomize.py" ]] ||
  fail "the program's own sitecustomize did not run: $(cat "$work/own_on.json")"
[[ $(field own_on pythonpath) == "$work/mine" ]] || fail "PYTHONPATH changed: $(field own_on pythonpath)"
echo "own sitecustomize: ran, PYTHONPATH and sys.path as without the module"

# 3. DDP: the same result; the progress file holds 7 steps and 7 + 2 collectives.
run ddp_on -- "$probe" --torch 7
run ddp_off --python_progress=false -- "$probe" --torch 7
[[ $(field ddp_on checksum) == "$(field ddp_off checksum)" ]] ||
  fail "checksums differ: $(field ddp_on checksum) vs $(field ddp_off checksum)"
[[ $(field ddp_on torch_loader) == "$(field ddp_off torch_loader)" ]] || fail "torch.__loader__ differs"
for name in ddp_on ddp_off plain_on own_on; do
  [[ ! -s $work/$name.err ]] || fail "$name: the workers wrote on stderr: $(cat "$work/$name.err")"
done
for rank in 0 1; do
  words=$(python3 -c 'import struct,sys; print(*struct.unpack("<6Q", open(sys.argv[1],"rb").read()))' \
    "$work/logs/mp-py-ddp_on-$$/attempt_0/rank_$rank/progress")
  read -r steps started done wait_ns samples since <<<"$words"
  [[ $steps == 7 && $started == 9 && $done == 9 && $since == 0 ]] ||
    fail "rank $rank: progress words $words, want 7 steps, 9 collectives started and done"
done
off_size=$(stat -c %s "$work/logs/mp-py-ddp_off-$$/attempt_0/rank_0/progress" 2>/dev/null || echo none)
[[ $off_size == none ]] || fail "python_progress=false still wrote a progress record ($off_size bytes)"
echo "DDP: checksum $(field ddp_on checksum) both ways; progress: 7 steps, 9 collectives per rank"
echo PASS
