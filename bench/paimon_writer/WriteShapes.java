import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.types.TimestampType;

import java.io.PrintWriter;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * More Paimon table shapes for arrowidx's tests, written with Java Paimon 0.9.0's
 * TableWrite/TableCommit (as WriteTables.java in ../shared/paimon-tables/writer); the
 * helpers to commit rows are {@link WriteBench}'s.
 *
 * <p>args: warehouse shapes | warehouse more
 */
public class WriteShapes extends WriteBench {

    public static void main(String[] args) throws Exception {
        Catalog catalog = catalog(args[0]);
        if (args[1].equals("shapes")) {
            shapes(catalog, args[0]);
        } else if (args[1].equals("more")) {
            more(catalog, args[0]);
        } else {
            throw new IllegalArgumentException("args: warehouse shapes | warehouse more");
        }
    }

    static void shapes(Catalog catalog, String warehouse) throws Exception {
        // 1. append table: two partition keys with NULL values, many types, schema evolution
        //    (rename + add column), then INSERT OVERWRITE of one partition (DELETE entries).
        Identifier ev = Identifier.create("db", "evolve");
        catalog.createTable(ev, Schema.newBuilder()
                .column("id", DataTypes.BIGINT())
                .column("p", DataTypes.STRING())
                .column("q", DataTypes.INT())
                .column("name", DataTypes.STRING())
                .column("status", DataTypes.STRING())
                .column("flag", DataTypes.BOOLEAN())
                .column("small", DataTypes.SMALLINT())
                .column("f", DataTypes.FLOAT())
                .column("dt", DataTypes.DATE())
                .column("dec", DataTypes.DECIMAL(10, 2))
                .partitionKeys("p", "q")
                .option("bucket", "-1")
                .option("file.format", "parquet")
                .option("file-index.bloom-filter.columns", "id,name")
                .option("file-index.bloom-filter.id.items", "600")
                .option("file-index.bloom-filter.name.items", "600")
                .option("file-index.bitmap.columns", "status")
                .option("file-index.in-manifest-threshold", "1 b")
                .build(), false);
        final long[] next = {0};
        for (int commit = 0; commit < 3; commit++) {
            if (commit == 2) {
                // one change list: the index options name columns, so they move with the rename;
                // old files keep their index on "name"
                catalog.alterTable(ev, java.util.Arrays.asList(
                        SchemaChange.renameColumn("name", "full_name"),
                        SchemaChange.addColumn("extra", DataTypes.INT()),
                        SchemaChange.removeOption("file-index.bloom-filter.name.items"),
                        SchemaChange.setOption("file-index.bloom-filter.full_name.items", "600"),
                        SchemaChange.setOption("file-index.bloom-filter.columns", "id,full_name")), false);
            }
            final int c = commit;
            commit(catalog, ev, null, w -> {
                String[] ps = {"x", null, "y z/%"};
                for (String p : ps) {
                    for (int q = 0; q < 2; q++) {
                        for (int i = 0; i < 500; i++) {
                            long id = next[0]++;
                            String status = i % 40 == 3 ? null : (c == 1 && i % 100 == 9 ? "rare" : STATUS[(int) (id % 4)]);
                            Object[] vals = {
                                id, s(p), q == 1 && i == 0 ? null : q, s("n" + ((id * 7919L) % 100003L)), s(status),
                                i % 3 == 0 ? null : (i % 2 == 0), (short) (i - 250), i * 0.5f,
                                18000 + i, Decimal.fromBigDecimal(new BigDecimal(id).movePointLeft(2), 10, 2)};
                            if (c == 2) {
                                Object[] v2 = new Object[vals.length + 1];
                                System.arraycopy(vals, 0, v2, 0, vals.length);
                                v2[vals.length] = i % 5 == 0 ? null : i;
                                vals = v2;
                            }
                            w.write(GenericRow.of(vals));
                        }
                    }
                }
            });
        }
        Map<String, String> part = new HashMap<>();
        part.put("p", "x");
        part.put("q", "0");
        commit(catalog, ev, part, w -> {
            for (int i = 0; i < 100; i++) {
                long id = 1_000_000 + i;
                w.write(GenericRow.of(id, s("x"), 0, s("over" + i), s("overwritten"), true, (short) i, 1.0f, 19000,
                        Decimal.fromBigDecimal(new BigDecimal(i), 10, 2), i));
            }
        });

        // 2. primary-key tables without deletion vectors: merged on read
        for (String engine : new String[] {"deduplicate", "first-row"}) {
            Identifier pi = Identifier.create("db", "pk_" + engine.replace("-", "_"));
            catalog.createTable(pi, Schema.newBuilder()
                    .column("p", DataTypes.STRING().notNull())
                    .column("id", DataTypes.INT().notNull())
                    .column("name", DataTypes.STRING())
                    .column("amount", DataTypes.INT())
                    .primaryKey("p", "id")
                    .partitionKeys("p")
                    .option("bucket", "2")
                    .option("file.format", "parquet")
                    .option("merge-engine", engine)
                    .option("num-sorted-run.compaction-trigger", "100")
                    .option("file-index.bloom-filter.columns", "name")
                    .option("file-index.bloom-filter.name.items", "1200")
                    .build(), false);
            boolean first = engine.equals("first-row");
            for (int commit = 0; commit < 3; commit++) {
                final int c = commit;
                commit(catalog, pi, null, w -> {
                    for (String p : new String[] {"a", "b"}) {
                        if (c == 0) {
                            for (int id = 1; id <= 1000; id++) {
                                w.write(GenericRow.of(s(p), id, s("v0"), id));
                            }
                        } else if (c == 1) {
                            for (int id = 1; id <= 100; id++) {
                                w.write(GenericRow.of(s(p), id, s("v1"), id + 10000));
                            }
                            if (!first) {
                                for (int id = 901; id <= 1000; id++) {
                                    w.write(GenericRow.ofKind(RowKind.DELETE, s(p), id, s("v0"), id));
                                }
                            }
                        } else {
                            for (int id = 500; id < 600; id++) {
                                w.write(GenericRow.of(s(p), id, s("v2"), id + 20000));
                            }
                            for (int id = 1001; id < 1011; id++) {
                                w.write(GenericRow.of(s(p), id, s("new"), id));
                            }
                        }
                    }
                });
            }
        }
        for (String name : new String[] {"evolve", "pk_deduplicate", "pk_first_row"}) {
            dumpCsv(catalog.getTable(Identifier.create("db", name)), Paths.get(warehouse, name + ".expected.csv").toString());
        }
        System.out.println("done: " + warehouse);
    }

    static byte[] bytes(long v, int n) {
        byte[] out = new byte[n];
        for (int i = 0; i < n; i++) {
            out[i] = (byte) (v >>> (8 * (i % 8)));
        }
        return out;
    }

    static void more(Catalog catalog, String warehouse) throws Exception {
        // 1. every primitive type Paimon writes to Parquet, with bloom filters (one of them at a
        //    high fpp) and bitmaps on several of them, NULLs in every column, 3 commits.
        Identifier ty = Identifier.create("db", "types");
        catalog.createTable(ty, Schema.newBuilder()
                .column("id", DataTypes.BIGINT())
                .column("t", DataTypes.TINYINT())
                .column("c", DataTypes.CHAR(5))
                .column("vc", DataTypes.VARCHAR(20))
                .column("b", DataTypes.BINARY(4))
                .column("vb", DataTypes.VARBINARY(10))
                .column("d38", DataTypes.DECIMAL(38, 10))
                .column("d5", DataTypes.DECIMAL(5, 2))
                .column("tm", DataTypes.TIME())
                .column("ts3", DataTypes.TIMESTAMP(3))
                .column("ts6", DataTypes.TIMESTAMP(6))
                .column("ts9", DataTypes.TIMESTAMP(9))
                .column("ltz", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(6))
                .column("dbl", DataTypes.DOUBLE())
                .option("bucket", "-1")
                .option("file.format", "parquet")
                .option("file-index.bloom-filter.columns", "t,vc,vb,ts3,ts6,tm")
                .option("file-index.bloom-filter.vc.fpp", "0.5")
                .option("file-index.bloom-filter.t.items", "400")
                .option("file-index.bloom-filter.vc.items", "400")
                .option("file-index.bloom-filter.vb.items", "400")
                .option("file-index.bloom-filter.ts3.items", "400")
                .option("file-index.bloom-filter.ts6.items", "400")
                .option("file-index.bloom-filter.tm.items", "400")
                .option("file-index.bitmap.columns", "c,ts9,ltz")
                .build(), false);
        for (int commit = 0; commit < 3; commit++) {
            final int c = commit;
            commit(catalog, ty, null, w -> {
                for (int i = 0; i < 400; i++) {
                    long id = c * 1000L + i;
                    boolean nul = i % 7 == 5;
                    long micros = 1_600_000_000_000_000L + id * 1_000_003L;
                    long millis = micros / 1000;
                    w.write(GenericRow.of(
                            id,
                            nul ? null : (byte) (i % 200 - 100),
                            nul ? null : s("c" + (i % 30)),
                            nul ? null : s("v" + ((id * 7919L) % 10007L)),
                            nul ? null : bytes(id, 4),
                            nul ? null : bytes(id * 31, 1 + (int) (id % 10)),
                            nul ? null : Decimal.fromBigDecimal(new BigDecimal(id * 1_000_000_007L).movePointLeft(10), 38, 10),
                            nul ? null : Decimal.fromBigDecimal(new BigDecimal(i - 200).movePointLeft(2), 5, 2),
                            nul ? null : (int) ((id * 60_001L) % 86_400_000L),
                            nul ? null : Timestamp.fromEpochMillis(millis),
                            nul ? null : Timestamp.fromEpochMillis(millis, (int) (micros % 1000) * 1000),
                            nul ? null : Timestamp.fromEpochMillis(millis, (int) (micros % 1000) * 1000 + (int) (id % 1000)),
                            nul ? null : Timestamp.fromEpochMillis(millis + (i % 5) * 3_600_000L, (int) (micros % 1000) * 1000),
                            nul ? null : id / 8.0));
                }
            });
        }

        // 2. primary key, dynamic bucket (hash index files in the index manifest), compacted
        //    after every second sorted run (DELETE entries, files above level 0), snapshots expired.
        Identifier dy = Identifier.create("db", "dyn_pk");
        catalog.createTable(dy, Schema.newBuilder()
                .column("id", DataTypes.INT().notNull())
                .column("name", DataTypes.STRING())
                .column("amount", DataTypes.INT())
                .primaryKey("id")
                .option("bucket", "-1")
                .option("dynamic-bucket.target-row-num", "300")
                .option("file.format", "parquet")
                .option("num-sorted-run.compaction-trigger", "2")
                .option("snapshot.num-retained.min", "1")
                .option("snapshot.num-retained.max", "2")
                .build(), false);
        for (int commit = 0; commit < 5; commit++) {
            final int c = commit;
            // as the connectors do: each key's bucket from the hash index of the latest snapshot
            FileStoreTable ft = (FileStoreTable) catalog.getTable(dy);
            HashBucketAssigner assigner = new HashBucketAssigner(
                    ft.snapshotManager(), "writer", ft.store().newIndexFileHandler(), 1, 1, 0, 300);
            RowPartitionKeyExtractor keys = new RowPartitionKeyExtractor(ft.schema());
            commit(catalog, dy, null, w -> {
                List<GenericRow> rows = new ArrayList<>();
                if (c == 0) {
                    for (int id = 1; id <= 1000; id++) {
                        rows.add(GenericRow.of(id, s("v0"), id));
                    }
                } else {
                    for (int id = c * 100; id < c * 100 + 150; id++) {
                        rows.add(GenericRow.of(id, s("v" + c), id + c * 10000));
                    }
                    for (int id = 1000 - c * 20; id > 1000 - c * 20 - 10; id--) {
                        rows.add(GenericRow.ofKind(RowKind.DELETE, id, s("x"), 0));
                    }
                }
                for (GenericRow row : rows) {
                    w.write(row, assigner.assign(keys.partition(row), keys.trimmedPrimaryKey(row).hashCode()));
                }
            });
        }

        // 3. deletion vectors, high-fpp bloom and a bitmap, expired snapshots, and a last
        //    commit written with write-only=true: its files stay at level 0, which Java's
        //    batch read does not read until they are compacted.
        Identifier dv = Identifier.create("db", "dv_level0");
        catalog.createTable(dv, Schema.newBuilder()
                .column("id", DataTypes.INT().notNull())
                .column("name", DataTypes.STRING())
                .column("status", DataTypes.STRING())
                .primaryKey("id")
                .option("bucket", "2")
                .option("file.format", "parquet")
                .option("deletion-vectors.enabled", "true")
                .option("file-index.bloom-filter.columns", "name")
                .option("file-index.bloom-filter.name.fpp", "0.9")
                .option("file-index.bloom-filter.name.items", "2000")
                .option("file-index.bitmap.columns", "status")
                .option("snapshot.num-retained.min", "1")
                .option("snapshot.num-retained.max", "2")
                .build(), false);
        for (int commit = 0; commit < 4; commit++) {
            final int c = commit;
            Map<String, String> dynamic = c == 3 ? Collections.singletonMap("write-only", "true") : null;
            commit(catalog, dv, null, dynamic, w -> {
                if (c == 0) {
                    for (int id = 1; id <= 2000; id++) {
                        w.write(GenericRow.of(id, s("n" + id), s(STATUS[id % 4])));
                    }
                } else if (c == 1) {
                    for (int id = 1; id <= 200; id++) {
                        w.write(GenericRow.of(id, s("u" + id), s("rare")));
                    }
                    for (int id = 1901; id <= 2000; id++) {
                        w.write(GenericRow.ofKind(RowKind.DELETE, id, s("n" + id), s(STATUS[id % 4])));
                    }
                } else if (c == 2) {
                    for (int id = 1000; id < 1100; id++) {
                        w.write(GenericRow.of(id, s("w" + id), s("paid")));
                    }
                } else {
                    for (int id = 500; id < 600; id++) {
                        w.write(GenericRow.of(id, s("level0-" + id), s("unseen")));
                    }
                }
            });
        }
        for (String name : new String[] {"types", "dyn_pk", "dv_level0"}) {
            dumpCsv(catalog.getTable(Identifier.create("db", name)), Paths.get(warehouse, name + ".expected.csv").toString());
        }
        System.out.println("done: " + warehouse);
    }

    static void dumpCsv(Table t, String path) throws Exception {
        ReadBuilder rb = t.newReadBuilder();
        List<String> lines = new ArrayList<>();
        RowType rt = t.rowType();
        for (Split sp : rb.newScan().plan().splits()) {
            try (RecordReader<InternalRow> r = rb.newRead().createReader(sp)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    InternalRow row;
                    while ((row = it.next()) != null) {
                        StringBuilder sb = new StringBuilder();
                        for (int i = 0; i < rt.getFieldCount(); i++) {
                            if (i > 0) {
                                sb.append(',');
                            }
                            if (row.isNullAt(i)) {
                                continue;
                            }
                            switch (rt.getTypeAt(i).getTypeRoot()) {
                                case BIGINT: sb.append(row.getLong(i)); break;
                                case INTEGER: sb.append(row.getInt(i)); break;
                                case DATE: sb.append(row.getInt(i)); break;
                                case SMALLINT: sb.append(row.getShort(i)); break;
                                case BOOLEAN: sb.append(row.getBoolean(i)); break;
                                case FLOAT: sb.append(row.getFloat(i)); break;
                                case DOUBLE: sb.append(row.getDouble(i)); break;
                                case TINYINT: sb.append(row.getByte(i)); break;
                                case DECIMAL: {
                                    DecimalType dt = (DecimalType) rt.getTypeAt(i);
                                    sb.append(row.getDecimal(i, dt.getPrecision(), dt.getScale()).toBigDecimal().toPlainString());
                                    break;
                                }
                                case TIME_WITHOUT_TIME_ZONE: sb.append(row.getInt(i)); break;
                                case TIMESTAMP_WITHOUT_TIME_ZONE:
                                case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                                    int p = rt.getTypeAt(i) instanceof TimestampType
                                            ? ((TimestampType) rt.getTypeAt(i)).getPrecision()
                                            : ((LocalZonedTimestampType) rt.getTypeAt(i)).getPrecision();
                                    Timestamp ts = row.getTimestamp(i, p);
                                    sb.append(ts.getMillisecond() * 1_000_000L + ts.getNanoOfMillisecond()); // epoch ns
                                    break;
                                }
                                case BINARY:
                                case VARBINARY: {
                                    sb.append('"');
                                    for (byte x : row.getBinary(i)) {
                                        sb.append(String.format("%02x", x));
                                    }
                                    sb.append('"');
                                    break;
                                }
                                default: sb.append('"').append(row.getString(i).toString()).append('"');
                            }
                        }
                        lines.add(sb.toString());
                    }
                    it.releaseBatch();
                }
            }
        }
        Collections.sort(lines);
        try (PrintWriter pw = new PrintWriter(Files.newBufferedWriter(Paths.get(path)))) {
            pw.println(String.join(",", rt.getFieldNames()));
            for (String l : lines) {
                pw.println(l);
            }
        }
    }
}
