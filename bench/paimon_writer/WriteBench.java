import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.util.List;
import java.util.Map;

/**
 * The benchmark table of {@code bench/bench_paimon.py}, written with Java Paimon's
 * TableWrite/TableCommit, and Java's own read of its queries. Only the API that Paimon 0.9.0
 * and master share: {@code run.sh} compiles it against 0.9.0, {@code run-master.sh} against
 * master.
 *
 * <p>args: warehouse bench ROWS FILES | warehouse bench-read (the needle: -Dneedle=ID)
 */
public class WriteBench {

    static final String[] STATUS = {"new", "paid", "shipped", "returned"};

    public static void main(String[] args) throws Exception {
        Catalog catalog = catalog(args[0]);
        if (args[1].equals("bench")) {
            bench(catalog, Long.parseLong(args[2]), Integer.parseInt(args[3]));
        } else if (args[1].equals("bench-read")) {
            benchRead(catalog);
        } else {
            throw new IllegalArgumentException("args: warehouse bench ROWS FILES | warehouse bench-read");
        }
    }

    /** The filesystem catalog of the warehouse at {@code warehouse}, with its database {@code db}. */
    static Catalog catalog(String warehouse) throws Exception {
        Options o = new Options();
        o.set("warehouse", "file://" + warehouse);
        Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(o));
        catalog.createDatabase("db", true);
        return catalog;
    }

    interface Rows {
        void write(BatchTableWrite w) throws Exception;
    }

    static void commit(Catalog catalog, Identifier id, Map<String, String> overwrite, Rows rows) throws Exception {
        commit(catalog, id, overwrite, null, rows);
    }

    static void commit(Catalog catalog, Identifier id, Map<String, String> overwrite, Map<String, String> dynamic, Rows rows)
            throws Exception {
        Table t = catalog.getTable(id);
        if (dynamic != null) {
            t = t.copy(dynamic);
        }
        BatchWriteBuilder wb = t.newBatchWriteBuilder();
        if (overwrite != null) {
            wb = wb.withOverwrite(overwrite);
        }
        try (BatchTableWrite w = wb.newWrite()) {
            w.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            rows.write(w);
            List<CommitMessage> msgs = w.prepareCommit();
            try (BatchTableCommit c = wb.newCommit()) {
                c.commit(msgs);
            }
        }
    }

    static BinaryString s(String v) {
        return v == null ? null : BinaryString.fromString(v);
    }

    static void bench(Catalog catalog, long rows, int files) throws Exception {
        Identifier bi = Identifier.create("db", "bench");
        catalog.createTable(bi, Schema.newBuilder()
                .column("id", DataTypes.BIGINT())
                .column("name", DataTypes.STRING())
                .column("status", DataTypes.STRING())
                .column("amount", DataTypes.INT())
                .column("price", DataTypes.DOUBLE())
                .option("bucket", "-1")
                .option("file.format", "parquet")
                .option("target-file-size", "1 gb")
                .option("file-index.bloom-filter.columns", "id")
                .option("file-index.bloom-filter.id.items", String.valueOf(rows / files))
                .option("file-index.bitmap.columns", "status")
                .option("file-index.in-manifest-threshold", "1 b")
                .build(), false);
        long per = rows / files;
        final long prime = 2_147_483_647L;
        for (int f = 0; f < files; f++) {
            final long start = f * per;
            commit(catalog, bi, null, w -> {
                for (long i = start; i < start + per; i++) {
                    long id = (i * 1_000_003L) % prime; // ids scattered: min/max overlap in every file
                    String status = i % 100 == 42 ? "rare" : STATUS[(int) (i % 4)];
                    w.write(GenericRow.of(id, s("name-" + (i % 100_000)), s(status), (int) (i % 10_000), (i % 1000) / 10.0));
                }
            });
        }
        System.out.println("bench table: " + rows + " rows in " + files + " commits");
    }

    static long count(Table t, Predicate p) throws Exception {
        ReadBuilder rb = t.newReadBuilder();
        if (p != null) {
            rb = rb.withFilter(p);
        }
        long rows = 0;
        for (Split s : rb.newScan().plan().splits()) {
            try (RecordReader<InternalRow> r = rb.newRead().createReader(s)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    while (it.next() != null) {
                        rows++;
                    }
                    it.releaseBatch();
                }
            }
        }
        return rows;
    }

    /** Java's own read of the benchmark queries: best of 3, milliseconds (reader rows, not filtered). */
    static void benchRead(Catalog catalog) throws Exception {
        Table t = catalog.getTable(Identifier.create("db", "bench"));
        RowType rt = t.rowType();
        PredicateBuilder b = new PredicateBuilder(rt);
        Map<String, Predicate> qs = new java.util.LinkedHashMap<>();
        qs.put("needle", b.equal(rt.getFieldIndex("id"), Long.parseLong(System.getProperty("needle", "1000003"))));
        qs.put("one_percent", b.equal(rt.getFieldIndex("status"), BinaryString.fromString("rare")));
        qs.put("full", null);
        for (Map.Entry<String, Predicate> e : qs.entrySet()) {
            long best = Long.MAX_VALUE;
            long rows = 0;
            for (int i = 0; i < 3; i++) {
                long t0 = System.nanoTime();
                rows = count(t, e.getValue());
                best = Math.min(best, System.nanoTime() - t0);
            }
            System.out.printf("java\t%s\t%.1f ms\t%d rows from reader%n", e.getKey(), best / 1e6, rows);
        }
    }
}
