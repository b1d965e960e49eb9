#!/usr/bin/env bash
# No-regression check of a restructuring: the same `manage.py analyze LOG` (parse, analysis and store in PostgreSQL)
# in two checkouts, alternated, each into its own fresh database; then the CLI output and the stored rows compared.
#
#   bash benchmarks/compare_trees.sh OLD_CHECKOUT NEW_CHECKOUT LOG [RUNS]
#
# LOG: e.g. `.venv/bin/python benchmarks/generate_large_log.py --tasks 200000 --out /tmp/bench`. Both checkouts run
# with this checkout's .venv. Needs PostgreSQL at 127.0.0.1:5432 (trust); creates and drops hs_compare_old/_new.
set -euo pipefail
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); log=$(cd "$(dirname "$3")" && pwd)/$(basename "$3"); runs=${4:-3}
py="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python"
out=$(mktemp -d)
pg() { psql -h 127.0.0.1 -U postgres -d "$1" -v ON_ERROR_STOP=1 -qtAc "$2"; }
for side in old new; do
  pg postgres "DROP DATABASE IF EXISTS hs_compare_$side" && pg postgres "CREATE DATABASE hs_compare_$side"
done
for i in $(seq 1 "$runs"); do
  for side in old new; do
    tree=$([ "$side" = old ] && echo "$old" || echo "$new")
    url=postgres://postgres@127.0.0.1:5432/hs_compare_$side
    (cd "$tree" && DATABASE_URL=$url "$py" manage.py migrate -v 0 && pg "hs_compare_$side" "SET client_min_messages = warning; TRUNCATE analyzer_analyzedapp CASCADE")
    start=$(date +%s.%N)
    (cd "$tree" && DATABASE_URL=$url "$py" manage.py analyze "$log" --format json > "$out/$side-$i.json")
    echo "$side run $i: $(echo "$(date +%s.%N) - $start" | bc) s"
  done
done
# The JSON columns of every table an analysis writes, hashed: equal hashes, equal stored rows.
rows="select md5(string_agg(x, '|' order by x)) from (
  select app_id||severity||score||metrics::text||parse_stats::text||warnings::text||spark_properties::text as x
    from analyzer_analyzedapp
  union all select stage_id||':'||attempt_id||task_duration_histogram::text||host_task_times::text
    ||task_duration_quantiles::text from analyzer_stagesummary
  union all select code||severity||score||observed::text||thresholds::text from analyzer_heuristicresult
  union all select executor_id||peak_metrics::text from analyzer_executorsummary
  union all select ranking::text||features::text||series::text from analyzer_executoranomalyreport
  union all select host||encode(z, 'hex') from analyzer_apphosttasks) t"
echo "stored rows: old $(pg hs_compare_old "$rows"), new $(pg hs_compare_new "$rows")"
"$py" - "$out/old-1.json" "$out/new-1.json" <<'PY'
import json, sys
old, new = (json.loads(open(path).readline()) for path in sys.argv[1:])
old.pop("stored_id", None), new.pop("stored_id", None)
print("CLI output:", "identical" if old == new else f"differs in {sorted(k for k in old | new if old.get(k) != new.get(k))}")
PY
for side in old new; do pg postgres "DROP DATABASE hs_compare_$side"; done
