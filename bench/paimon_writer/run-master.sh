#!/usr/bin/env bash
# Compile and run WriteBench.java with Apache Paimon master (2.1-SNAPSHOT): the benchmark table
# as current Paimon writes it, which pypaimon 2.1 can read (it cannot read 0.9.0's manifests).
# args: warehouse-dir bench ROWS FILES | warehouse-dir bench-read
# PAIMON_MASTER: a directory holding classes/ and paimon-shade-from-0.9.0.jar, as
# ../shared/paimon-tables/writer/build-master.sh leaves them in its master/ (Paimon compiled from
# source; see docs/benchmarks.md for the steps). Exits 3 when it is not set.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ -z "${PAIMON_MASTER:-}" ] || [ ! -d "$PAIMON_MASTER/classes" ]; then
  echo "PAIMON_MASTER is not a Paimon master build (a directory with classes/ and paimon-shade-from-0.9.0.jar)" >&2
  exit 3
fi
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$HERE/../../.venv/bin/python" ]; then PY="$HERE/../../.venv/bin/python"; else PY=python3; fi
fi
SJ="${SJ:-$("$PY" -c "import os,pyspark;print(os.path.join(os.path.dirname(pyspark.__file__),'jars'))")}"
CACHE="${ARROWIDX_CACHE:-$HOME/.cache/arrowidx}"
CP="$PAIMON_MASTER/classes:$PAIMON_MASTER/paimon-shade-from-0.9.0.jar:$SJ/*"
for jar in /usr/share/java/httpclient5.jar /usr/share/java/httpcore5.jar; do
  if [ -f "$jar" ]; then CP="$CP:$jar"; fi
done
CLS="$CACHE/writebench-master-classes"; mkdir -p "$CLS"
javac -nowarn -d "$CLS" -cp "$CP" "$HERE/WriteBench.java" 2>&1 | grep -v '^Note:' || true
W="$1"; shift
if [ "$1" != "bench-read" ]; then rm -rf "$W"; mkdir -p "$W"; fi
exec java ${JAVA_OPTS:-} --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED \
  -cp "$CLS:$CP" WriteBench "$W" "$@"
