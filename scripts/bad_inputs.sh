#!/usr/bin/env bash
# Tries a qlinear binary (default build/qlinear, the release build) against the bad-input
# corpus: writes every case with bad_inputs_corpus (built by the ci preset), runs `qlinear
# inspect --model CASE` or the case's own command line under a 60 s limit, and checks that it
# fails with the expected exit code, within the time, naming every expected culprit, printing
# no raw control character and no exception text. The gtest bad_input_tests does the same for
# the ci build on every test run; this is for other builds.
#   bash scripts/bad_inputs.sh [path/to/qlinear]
set -euo pipefail
cd "$(dirname "$0")/.."
qlinear=${1:-build/qlinear}
corpus_tool=${BAD_INPUTS_CORPUS:-build-ci/tests/bad_inputs/bad_inputs_corpus}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$corpus_tool" "$out" >/dev/null
/usr/bin/python3 - "$qlinear" "$out" <<'PY'
import json, subprocess, sys
qlinear, out = sys.argv[1], sys.argv[2]
failed = 0
cases = [json.loads(line) for line in open(f"{out}/manifest.jsonl")]
for case in cases:
    folder = f"{out}/{case['name']}"
    args = [a.replace("{dir}", folder) for a in case["args"]] or ["inspect", "--model", folder]
    try:
        run = subprocess.run([qlinear] + args, capture_output=True, timeout=60)
        err = run.stderr.decode("utf-8", "backslashreplace")
        problems = []
        if run.returncode != case["exit_code"]:
            problems.append(f"exit {run.returncode}, expected {case['exit_code']}")
        problems += [f"no '{m}'" for m in case["mentions"] if m.lower() not in err.lower()]
        if any(b < 0x20 and b != 0x0A for b in run.stderr):
            problems.append("raw control character on stderr")
        if "exception" in err.lower():
            problems.append("exception text on stderr")
    except subprocess.TimeoutExpired:
        problems, err = ["timed out after 60 s"], ""
    status = "ok" if not problems else "FAIL " + "; ".join(problems)
    failed += bool(problems)
    print(f"{case['name']:<32} {case['group']:<10} {status}")
    if problems:
        print("    " + err.strip().replace("\n", "\n    "))
print(f"{len(cases) - failed} of {len(cases)} cases as expected")
sys.exit(1 if failed else 0)
PY
