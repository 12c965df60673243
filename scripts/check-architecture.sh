#!/usr/bin/env bash
# The claims of docs/architecture.md that a grep can check, checked: each
# prints the offending lines and fails when a claim stops being true.
#   check-architecture.sh [SOURCE_DIR]
set -uo pipefail
cd "${1:-$(dirname "$0")/..}"
rc=0
code=(engine sim harness workloads traces)
claim() {  # description, then the offending lines (empty: the claim holds)
  local what=$1 found=$2
  if [ -n "$found" ]; then
    echo "FAIL: $what:"
    echo "$found" | sed 's/^/  /'
    rc=1
  else
    echo "ok: $what"
  fi
}
# Plan parameters are typed (engine/plan/plan_params.h): none is read by key.
claim "no plan parameter read by string key" \
  "$(grep -rn --include='*.cc' --include='*.h' -E 'params\.value\(|params\[\"' "${code[@]}")"
# The cluster kind is typed (workloads::ClusterKind); only the parser reads the prefix.
claim "no cluster kind guessed from an \"emulated:\" prefix" \
  "$(grep -rn --include='*.cc' --include='*.h' -E 'rfind\("emulated:"|starts_with\("emulated:"' "${code[@]}" \
     | grep -v '^workloads/cluster.cc:')"
# Strategy names are compared or joined only in the strategy table.
names=$(grep -oE '\.name = "[a-z0-9-]+"' engine/sync/strategy_registry.cc | sed -E 's/.*"(.*)"/\1/' | paste -sd'|')
claim "no strategy name compared or joined outside the table" \
  "$(grep -rn --include='*.cc' --include='*.h' -E "(==|!=) *\"($names)\"|\"($names)\" *(==|!=)|\+ *\"-($names|sparse)\"" \
     engine/plan engine/sync engine/exec sim harness \
     | grep -v '^engine/sync/strategy_registry.cc:')"
# The dependency rule, chunking and bucket grouping live in the schedule only.
claim "no stage dependency rule outside engine/plan/schedule.cc" \
  "$(grep -rn --include='*.cc' -E '\.perBucket|stages\[[^]]*\]\.deps' engine/exec sim harness \
     | grep -v '^engine/plan/')"
# Inside engine/exec, dependencies point one way: rank/ -> update/ ->
# weight_store/ -> executor/ (chaos/ and launch/ above or beside them).
claim "executor/ includes nothing of update/, rank/, weight_store/ or chaos/" \
  "$(grep -rnE '#include "engine/exec/(update|rank|weight_store|chaos)/' engine/exec/executor)"
claim "update/ and weight_store/ include nothing of rank/ or chaos/" \
  "$(grep -rnE '#include "engine/exec/(rank|chaos)/' engine/exec/update engine/exec/weight_store)"
claim "weight_store/ includes nothing of update/" \
  "$(grep -rnE '#include "engine/exec/update/' engine/exec/weight_store)"
# The executor knows no update mode.
claim "UpdateMode is defined with the update paths only" \
  "$(grep -rn 'enum class UpdateMode' engine | grep -v '^engine/exec/update/')"
claim "no update mode named in engine/exec/rank or engine/exec/executor" \
  "$(grep -rn 'UpdateMode::k' engine/exec/rank engine/exec/executor)"
exit $rc
