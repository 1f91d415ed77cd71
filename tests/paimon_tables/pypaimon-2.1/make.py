"""Writes ``db.db/t`` here with pypaimon 2.1.0 (run with an interpreter that has it, e.g.
``build/pypaimon-venv/bin/python tests/paimon_tables/pypaimon-2.1/make.py``): an append table
partitioned by ``dt``, three commits of 200 rows (one file per partition per commit), ids
scattered so that every file's min/max spans nearly all of them, NULLs in ``status``."""

import os
import shutil

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

HERE = os.path.dirname(os.path.abspath(__file__))
shutil.rmtree(os.path.join(HERE, "db.db"), ignore_errors=True)
catalog = CatalogFactory.create({"warehouse": "file://" + HERE})
catalog.create_database("db", True)
schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("status", pa.string()), ("amount", pa.int32())])
catalog.create_table("db.t", Schema.from_pyarrow_schema(schema, partition_keys=["dt"], options={"bucket": "-1"}), False)
table = catalog.get_table("db.t")
for c in range(3):
    ids = range(c * 200, (c + 1) * 200)
    data = pa.table(
        {
            "dt": [f"2026-01-0{1 + i % 2}" for i in ids],
            "id": pa.array([(i * 7919) % 1_000_003 for i in ids], pa.int64()),
            "name": [f"n{i}" for i in ids],
            "status": [None if i % 7 == 0 else ("rare" if i % 100 == 42 else ("new", "paid", "sent")[i % 3]) for i in ids],
            "amount": pa.array([i % 50 for i in ids], pa.int32()),
        },
        schema=schema,
    )
    builder = table.new_batch_write_builder()
    writer, commit = builder.new_write(), builder.new_commit()
    writer.write_arrow(data)
    commit.commit(writer.prepare_commit())
    writer.close()
    commit.close()
