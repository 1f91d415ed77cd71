#!/usr/bin/env bash
# Compile and run WriteShapes.java / WriteBench.java with released Paimon 0.9.0 (the bundle inside PyPI's
# pypaimon==0.2.0 sdist). args: warehouse-dir shapes | warehouse-dir more | warehouse-dir bench ROWS FILES | warehouse-dir bench-read
# J09: path of deps/jars/paimon-python-java-bridge-0.9.0.jar (downloaded here if unset).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
# PYTHON: an interpreter with pyspark (its jars give the Hadoop classes); default: the
# project's .venv (made by make test / make demo), else python3 on the PATH
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x "$HERE/../../.venv/bin/python" ]; then PY="$HERE/../../.venv/bin/python"; else PY=python3; fi
fi
SJ="${SJ:-$("$PY" -c "import os,pyspark;print(os.path.join(os.path.dirname(pyspark.__file__),'jars'))")}"
CACHE="${ARROWIDX_CACHE:-$HOME/.cache/arrowidx}"
if [ -z "${J09:-}" ]; then
  J09="$CACHE/pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
  if [ ! -f "$J09" ]; then
    mkdir -p "$CACHE"
    "$PY" -m pip download --no-deps --no-binary :all: pypaimon==0.2.0 -d "$CACHE" >/dev/null
    tar xzf "$CACHE/pypaimon-0.2.0.tar.gz" -C "$CACHE" pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar
  fi
fi
CLS="$CACHE/writeshapes-classes"; mkdir -p "$CLS"
javac -nowarn -d "$CLS" -cp "$J09" "$HERE/WriteShapes.java" "$HERE/WriteBench.java" 2>&1 | grep -v '^Note:' || true
W="$1"; shift
case "$1" in bench|bench-read) MAIN=WriteBench ;; *) MAIN=WriteShapes ;; esac
if [ "$1" != "bench-read" ]; then rm -rf "$W"; mkdir -p "$W"; fi
exec java ${JAVA_OPTS:-} -cp "$CLS:$J09:$SJ/hadoop-client-api-3.5.0.jar:$SJ/hadoop-client-runtime-3.5.0.jar" "$MAIN" "$W" "$@"
