"""``arrowidx.paimon.delete`` on an object store: a Java-written table with deletion vectors
uploaded to a real S3 server (``moto_server``, integration/s3_support.py), rows deleted through
its ``s3://`` URI with ``storage_options`` (the snapshot created put-if-absent), then read
back: the same rows and the same deletion-vector bytes as the same delete on a local copy."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastavro")

from arrowidx import paimon  # noqa: E402
from arrowidx.cli import main as cli  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

SOURCE = Path(__file__).resolve().parents[1] / "tests" / "paimon_tables" / "dv-0.9.0" / "db.db" / "append_dv"


def _vectors(table) -> dict[str, bytes]:
    out = {}
    for name, rng in table.deletion_ranges.items():
        out[name] = table.fs.open_input_file(rng.index_file).read_at(rng.length + 8, rng.offset)
    return out


def test_paimon_delete_on_s3(s3, tmp_path, capsys):
    bucket = f"paimon-delete-{os.getpid()}"
    s3.create_bucket(bucket)
    client = s3.client()
    for path in SOURCE.rglob("*"):
        if path.is_file():
            client.upload_file(str(path), bucket, f"db.db/append_dv/{path.relative_to(SOURCE)}")
    uri, options = f"s3://{bucket}/db.db/append_dv", s3.storage_options()
    local = str(tmp_path / "append_dv")
    shutil.copytree(SOURCE, local)
    for where in ["status = 'rare'", "amount < 25 OR name = 'name-3999'"]:
        report = paimon.delete(uri, where, storage_options=options)
        mine = paimon.delete(local, where)
        assert report.committed and report.rows_deleted == mine.rows_deleted > 0
    remote = paimon.open_table(uri, storage_options=options)
    assert remote.snapshot_id == paimon.open_table(local).snapshot_id
    assert remote.to_table().sort_by("id").equals(paimon.open_table(local).to_table().sort_by("id"))
    assert _vectors(remote) == _vectors(paimon.open_table(local))
    flags = [f"--storage-option={k}={v}" for k, v in options.items()]
    assert cli(["paimon", "delete", uri, "--where", "amount = 100", "--yes", *flags]) == 0
    assert "deleted 1 row(s)" in capsys.readouterr().out
    assert paimon.open_table(uri, storage_options=options).count_rows() == remote.count_rows() - 1
