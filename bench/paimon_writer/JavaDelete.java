import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.FileRecordIterator;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Java Paimon's own DELETE (what Spark's {@code DeleteFromPaimonTableCommand} writes, without
 * Spark), the tables arrowidx's delete tests and benchmark use, and a compaction. Compiled
 * against Paimon 0.9.0 and master with the version's {@code DvCommit} (v09/ or master/).
 *
 * <pre>
 * create WAREHOUSE DB.TABLE append|flat|bucketed|pk ROWS FILES [KEY=VALUE ...]
 *     a table with deletion vectors: id BIGINT, name, status, amount INT, price DOUBLE, part
 *     (append: partitioned by part, bucket -1; flat: not partitioned, bucket -1; bucketed:
 *     bucket 2 by id; pk: primary key id, bucket 2); FILES commits of ROWS/FILES rows;
 *     KEY=VALUE: more table options
 * delete WAREHOUSE DB.TABLE TERM...   Java's DELETE of the rows where every TERM holds
 *     (FIELD:eq|ne|lt|le|gt|ge:VALUE, FIELD:in:V1|V2|..., FIELD:isnull, FIELD:notnull);
 *     prints "deleted ROWS MS" (ROWS: the rows newly deleted)
 * serve                               prints "ready", then per line "WAREHOUSE DB.TABLE TERM..." one
 *                                     delete, printing "java ROWS MS" (the JVM kept warm)
 * compact WAREHOUSE DB.TABLE [GO-FILE|-] [KEY=VALUE ...]   Java's compaction of the table (append:
 *     its coordinator's tasks; pk: a full compaction of every bucket) with these dynamic options
 *     (e.g. compaction.min.file-num=2); with GO-FILE: prints "ready" once the compaction is
 *     written and commits only when GO-FILE exists. Prints "compacted N" (commit messages) or
 *     "conflict: MESSAGE" when the commit is refused.
 * </pre>
 */
public class JavaDelete extends PaimonCheck {

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "create":
                create(args);
                break;
            case "delete":
                long t0 = System.nanoTime();
                long n = delete(catalog(args[1]), args[2], Arrays.copyOfRange(args, 3, args.length));
                System.out.printf("deleted %d %.1f%n", n, (System.nanoTime() - t0) / 1e6);
                break;
            case "serve":
                serve();
                break;
            case "compact":
                compact(args);
                break;
            default:
                throw new IllegalArgumentException("create | delete | serve | compact");
        }
    }

    static Identifier id(String name) {
        String[] p = name.split("\\.");
        return Identifier.create(p[0], p[1]);
    }

    static void create(String[] args) throws Exception {
        Catalog catalog = catalog(args[1]);
        Identifier ident = id(args[2]);
        String kind = args[3];
        long rows = Long.parseLong(args[4]);
        int files = Integer.parseInt(args[5]);
        Schema.Builder b = Schema.newBuilder()
                .column("id", kind.equals("pk") ? DataTypes.BIGINT().notNull() : DataTypes.BIGINT())
                .column("name", DataTypes.STRING())
                .column("status", DataTypes.STRING())
                .column("amount", DataTypes.INT())
                .column("price", DataTypes.DOUBLE())
                .column("part", DataTypes.STRING())
                .option("file.format", "parquet")
                .option("deletion-vectors.enabled", "true")
                .option("target-file-size", "1 gb");
        if (kind.equals("append")) {
            b.partitionKeys("part").option("bucket", "-1");
        } else if (kind.equals("flat")) {
            b.option("bucket", "-1");
        } else if (kind.equals("bucketed")) {
            b.option("bucket", "2").option("bucket-key", "id");
        } else {
            b.primaryKey("id").option("bucket", "2");
        }
        for (int i = 6; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            b.option(kv[0], kv[1]);
        }
        catalog.createTable(ident, b.build(), false);
        long per = rows / files;
        final long prime = 2_147_483_647L;
        for (int f = 0; f < files; f++) {
            final long start = f * per;
            final long end = f == files - 1 ? rows : start + per;
            commit(catalog, ident, null, w -> {
                for (long i = start; i < end; i++) {
                    long id = (i * 1_000_003L) % prime;
                    String status = i % 100 == 42 ? "rare" : i % 7 == 3 ? null : STATUS[(int) (i % 4)];
                    w.write(GenericRow.of(id, s("name-" + (i % 100_000)), s(status), (int) (i % 10_000), (i % 1000) / 10.0,
                            s(i % 2 == 0 ? "a" : "b")));
                }
            });
        }
        System.out.println("created " + rows + " rows in " + files + " commits");
    }

    /** The predicate of the terms (AND of all). */
    static Predicate predicate(RowType rt, String[] terms) {
        PredicateBuilder b = new PredicateBuilder(rt);
        List<Predicate> parts = new ArrayList<>();
        for (String term : terms) {
            String[] q = term.split(":", 3);
            int f = rt.getFieldIndex(q[0]);
            switch (q[1]) {
                case "eq": parts.add(b.equal(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "ne": parts.add(b.notEqual(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "lt": parts.add(b.lessThan(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "le": parts.add(b.lessOrEqual(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "gt": parts.add(b.greaterThan(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "ge": parts.add(b.greaterOrEqual(f, literal(rt.getTypeAt(f), q[2]))); break;
                case "isnull": parts.add(b.isNull(f)); break;
                case "notnull": parts.add(b.isNotNull(f)); break;
                case "in": {
                    List<Object> values = new ArrayList<>();
                    for (String v : q[2].split("\\|")) {
                        values.add(literal(rt.getTypeAt(f), v));
                    }
                    parts.add(b.in(f, values));
                    break;
                }
                default: throw new IllegalArgumentException("unknown term " + term);
            }
        }
        return PredicateBuilder.and(parts);
    }

    /** Java's DELETE: returns the rows deleted. */
    static long delete(Catalog catalog, String table, String[] terms) throws Exception {
        FileStoreTable t = (FileStoreTable) catalog.getTable(id(table));
        Predicate p = predicate(t.rowType(), terms);
        if (!t.primaryKeys().isEmpty()) {
            return deletePrimaryKeys(catalog, t, p, table);
        }
        // as Spark's DELETE: the candidate splits (Paimon's planning: statistics, file indexes)
        // read with the predicate pushed down (index skipping) and the deletion vectors applied;
        // each row where p holds gives its file and position (Spark's metadata columns)
        Snapshot snap = t.snapshotManager().latestSnapshot();
        ReadBuilder rb = t.newReadBuilder().withFilter(p);
        boolean unaware = t.coreOptions().bucket() == -1;
        Map<String, Map<String, DeletionVector>> groups = new LinkedHashMap<>();
        Map<String, DataSplit> groupSplit = new LinkedHashMap<>();
        long deleted = 0;
        for (Split s : rb.newScan().plan().splits()) {
            DataSplit split = (DataSplit) s;
            String key = split.partition().toString() + "/" + split.bucket();
            try (RecordReader<InternalRow> r = rb.newRead().createReader(split)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    FileRecordIterator<InternalRow> fit = (FileRecordIterator<InternalRow>) it;
                    InternalRow row;
                    while ((row = fit.next()) != null) {
                        if (p.test(row)) {
                            groups.computeIfAbsent(key, k -> new LinkedHashMap<>())
                                    .computeIfAbsent(fit.filePath().getName(), k -> DvCommit.newVector(t))
                                    .delete(fit.returnedPosition());
                            groupSplit.put(key, split);
                            deleted++;
                        }
                    }
                    it.releaseBatch();
                }
            }
        }
        List<CommitMessage> messages = new ArrayList<>();
        for (Map.Entry<String, Map<String, DeletionVector>> g : groups.entrySet()) {
            DataSplit split = groupSplit.get(g.getKey());
            messages.add(DvCommit.message(t, snap, split.partition(), split.bucket(), unaware, g.getValue()));
        }
        if (!messages.isEmpty()) {
            try (BatchTableCommit c = t.newBatchWriteBuilder().newCommit()) {
                c.commit(messages);
            }
        }
        return deleted;
    }

    /** Spark's DELETE on a primary-key table: the rows read where p holds, written back as -D. */
    static long deletePrimaryKeys(Catalog catalog, FileStoreTable t, Predicate p, String table) throws Exception {
        RowType rt = t.rowType();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < rt.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(rt.getTypeAt(i), i));
        }
        List<GenericRow> rows = new ArrayList<>();
        ReadBuilder rb = t.newReadBuilder().withFilter(p);
        for (Split s : rb.newScan().plan().splits()) {
            try (RecordReader<InternalRow> r = rb.newRead().createReader(s)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    InternalRow row;
                    while ((row = it.next()) != null) {
                        if (p.test(row)) {
                            Object[] values = new Object[getters.size()];
                            for (int i = 0; i < values.length; i++) {
                                values[i] = getters.get(i).getFieldOrNull(row);
                            }
                            rows.add(GenericRow.ofKind(RowKind.DELETE, values));
                        }
                    }
                    it.releaseBatch();
                }
            }
        }
        commit(catalog, id(table), null, w -> {
            for (GenericRow row : rows) {
                w.write(row);
            }
        });
        return rows.size();
    }

    static void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] a = line.trim().split(" ");
            long t0 = System.nanoTime();
            long n = delete(catalog(a[0]), a[1], Arrays.copyOfRange(a, 2, a.length));
            System.out.printf("java\t%d\t%.1f%n", n, (System.nanoTime() - t0) / 1e6);
            System.out.flush();
        }
    }

    static void compact(String[] args) throws Exception {
        Catalog catalog = catalog(args[1]);
        FileStoreTable t = (FileStoreTable) catalog.getTable(id(args[2]));
        String go = args.length > 3 && !args[3].equals("-") ? args[3] : null;
        Map<String, String> dynamic = new LinkedHashMap<>();
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            dynamic.put(kv[0], kv[1]);
        }
        t = t.copy(dynamic);
        List<CommitMessage> messages = new ArrayList<>();
        if (t.primaryKeys().isEmpty()) {
            messages.addAll(DvCommit.compactAppend(t));
        } else {
            BatchWriteBuilder wb = t.newBatchWriteBuilder();
            try (BatchTableWrite w = wb.newWrite()) {
                w.withIOManager(org.apache.paimon.disk.IOManager.create(System.getProperty("java.io.tmpdir")));
                for (Split s : t.newReadBuilder().newScan().plan().splits()) {
                    DataSplit split = (DataSplit) s;
                    w.compact(split.partition(), split.bucket(), true);
                }
                messages.addAll(w.prepareCommit());
            }
        }
        if (go != null) {
            System.out.println("ready");
            System.out.flush();
            while (!Files.exists(Paths.get(go))) {
                Thread.sleep(20);
            }
        }
        try (BatchTableCommit c = t.newBatchWriteBuilder().newCommit()) {
            c.commit(messages);
            System.out.println("compacted " + messages.size());
        } catch (Exception e) {
            System.out.println("conflict: " + String.valueOf(e.getMessage()).split("\n")[0]);
        }
    }
}
