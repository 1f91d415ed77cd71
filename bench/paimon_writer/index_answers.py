"""Java's answers for the ``types`` table of tests/paimon_tables/more-0.9.0: Apache Paimon's
own ``FileIndexPredicate`` (``shared/javaref/bin/paimon-eval``) evaluates each predicate
below on each data file's ``.index`` extra file, and the answers are written to
``java-index-answers.json`` beside the table (read by tests/test_paimon_shapes.py).

    python bench/paimon_writer/index_answers.py [../shared/javaref]

Literals are in the golden corpus's encoding (timestamps as epoch microseconds, TIME as
milliseconds of the day): see shared/golden/README.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE.parents[1] / "tests" / "paimon_tables" / "more-0.9.0"
TYPES = {"t": "TINYINT", "c": "CHAR(5)", "vc": "VARCHAR(20)", "tm": "TIME", "ts3": "TIMESTAMP(3)",
         "ts6": "TIMESTAMP(6)", "ts9": "TIMESTAMP(9)", "ltz": "TIMESTAMP(6) WITH LOCAL TIME ZONE"}  # fmt: skip
ID1_MICROS = {
    "ts3": 1_600_000_001_000_000,
    "ts6": 1_600_000_001_000_003,
    "ts9": 1_600_000_001_000_003,
    "ltz": 1_600_003_601_000_003,
}  # fmt: skip  (row id 1, as WriteShapes.more wrote it)
PREDICATES = [
    {"op": "eq", "field": "t", "literal": 5},
    {"op": "eq", "field": "t", "literal": 127},
    {"op": "in", "field": "t", "literals": [5, -100]},
    {"op": "is_null", "field": "t"},
    {"op": "eq", "field": "c", "literal": "c7"},
    {"op": "eq", "field": "c", "literal": "zz"},
    {"op": "in", "field": "c", "literals": ["c1", "c29"]},
    {"op": "is_null", "field": "c"},
    {"op": "eq", "field": "vc", "literal": "v7919"},
    {"op": "eq", "field": "vc", "literal": "absent"},
    {"op": "eq", "field": "tm", "literal": 60001},
    {"op": "eq", "field": "tm", "literal": 1},
    *[{"op": "eq", "field": c, "literal": v} for c, v in ID1_MICROS.items()],
    {"op": "eq", "field": "ts3", "literal": ID1_MICROS["ts3"] + 1000},
    {"op": "is_null", "field": "ltz"},
    {"op": "in", "field": "ts9", "literals": [ID1_MICROS["ts9"], ID1_MICROS["ts9"] + 1]},
]


def main() -> None:
    javaref = Path(
        sys.argv[1] if len(sys.argv) > 1 else HERE.parents[1].parent / "shared" / "javaref"
    )
    files = sorted((TABLE / "db.db" / "types").glob("bucket-*/*.parquet.index"))
    answers = []
    with tempfile.TemporaryDirectory() as tmp:
        for pred in PREDICATES:
            col = pred["field"]
            dataset, predicates = Path(tmp) / "ds.json", Path(tmp) / "p.json"
            dataset.write_text(
                json.dumps(
                    {
                        "name": "types",
                        "rowCount": 0,
                        "columns": [{"name": col, "paimonType": TYPES[col], "values": []}],
                    }
                )
            )
            predicates.write_text(json.dumps([pred]))
            per_file = {}
            for f in files:
                out = subprocess.run([str(javaref / "bin" / "paimon-eval"), str(f), str(dataset), str(predicates)],
                                     capture_output=True, text=True, check=True)  # fmt: skip
                per_file[f.name[: -len(".index")]] = json.loads(out.stdout)["predicates"][0][
                    "expected"
                ]
            answers.append({"predicate": pred, "files": per_file})
    out = TABLE / "java-index-answers.json"
    out.write_text(
        json.dumps({"writtenBy": "shared/javaref/bin/paimon-eval", "answers": answers}, indent=1)
        + "\n"
    )
    print(f"{len(answers)} predicates x {len(files)} files -> {out}")


if __name__ == "__main__":
    main()
