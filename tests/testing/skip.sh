# Sourced by shell tests: the suite's skip rule (tests/testing/skip.h has it for C++).
# skip WHY: the test lacks something CI provides (root, ip netns, a Debian package): prints
# "SKIP: WHY" and exits 77 (CTest: skipped, SKIP_RETURN_CODE 77). Under CI (CI=true) or
# ACCEL_STRICT_TESTS=1 it prints "FAIL: ..." and exits 1 instead; ACCEL_STRICT_TESTS=0 turns that
# off even under CI.
strict_tests() {
  local v=${ACCEL_STRICT_TESTS:-}
  [[ -n $v ]] || v=${CI:-}
  [[ ${v,,} == 1 || ${v,,} == true || ${v,,} == yes ]]
}

skip() {
  if strict_tests; then
    local why="CI=${CI:-}"
    [[ -n ${ACCEL_STRICT_TESTS:-} ]] && why="ACCEL_STRICT_TESTS=$ACCEL_STRICT_TESTS"
    echo "FAIL: a skip is a failure here ($why; ACCEL_STRICT_TESTS=0 allows it): $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# skip_not_provided WHY: the test lacks something CI cannot provide either (hardware, or software
# that is no Debian package and cannot be fetched here, such as HF accelerate): prints "SKIP: WHY"
# and exits 77, under CI too (as a GPU test without a GPU).
skip_not_provided() {
  echo "SKIP: $*"
  exit 77
}
