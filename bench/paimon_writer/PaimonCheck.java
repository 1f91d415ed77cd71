import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.RowType;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What Java Paimon reads of a table (arrowidx's rewrite tests ask it before and after
 * arrowidx commits), and a Java writer appending to a table while arrowidx rewrites it. Only
 * the API Paimon 0.9.0 and master share: compiled against both by {@code check.sh}.
 *
 * <pre>
 * read WAREHOUSE DB.TABLE SNAPSHOT|latest [NAME:FIELD:eq:VALUE | NAME:FIELD:isnull] ...
 *   full  rows  digest                                    (the table read whole)
 *   q     NAME  read.enabled  splits  reader-rows  matching-rows  digest-of-matching
 * append WAREHOUSE DB.TABLE COMMITS ROWS OFFSET [GATE-DIR]
 *   commits COMMITS appends of ROWS generated rows (ids from OFFSET), then prints "appended N";
 *   with GATE-DIR, commit k (k >= 2) waits until GATE-DIR/go-k exists, and after commit k the
 *   file GATE-DIR/committed-k is created (a test orders its own commits against these)
 * </pre>
 *
 * Digests are SHA-256 of the rows as sorted strings: equal digests, equal multisets of rows.
 */
public class PaimonCheck extends WriteBench {

    public static void main(String[] args) throws Exception {
        Catalog catalog = catalog(args[0]);
        String[] name = args[2].split("\\.");
        Identifier id = Identifier.create(name[0], name[1]);
        if (args[1].equals("read")) {
            read(catalog.getTable(id), args);
        } else if (args[1].equals("append")) {
            append(catalog, id, Integer.parseInt(args[3]), Integer.parseInt(args[4]), Long.parseLong(args[5]),
                    args.length > 6 ? args[6] : null);
        } else {
            throw new IllegalArgumentException("read ... | append ...");
        }
    }

    static Table at(Table t, String snapshot, boolean indexes) {
        Map<String, String> dyn = new HashMap<>();
        if (!snapshot.equals("latest")) {
            dyn.put("scan.snapshot-id", snapshot);
        }
        dyn.put("file-index.read.enabled", String.valueOf(indexes));
        // one thread reads the manifests: Paimon 0.9.0's scan tests embedded indexes with a
        // HashMap shared by its manifest threads (ConcurrentModificationException at random)
        dyn.put("scan.manifest.parallelism", "1");
        return t.copy(dyn);
    }

    static Object literal(DataType type, String v) {
        switch (type.getTypeRoot()) {
            case BIGINT:
                return Long.parseLong(v);
            case INTEGER:
                return Integer.parseInt(v);
            case SMALLINT:
                return Short.parseShort(v);
            case TINYINT:
                return Byte.parseByte(v);
            case DOUBLE:
                return Double.parseDouble(v);
            case FLOAT:
                return Float.parseFloat(v);
            case BOOLEAN:
                return Boolean.parseBoolean(v);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v);
            default:
                throw new IllegalArgumentException("literal of type " + type + " not supported here");
        }
    }

    static String show(InternalRow row, List<InternalRow.FieldGetter> getters) {
        StringBuilder sb = new StringBuilder();
        for (InternalRow.FieldGetter g : getters) {
            Object v = g.getFieldOrNull(row);
            sb.append(v == null ? "\\N" : v.toString()).append('\u0001');
        }
        return sb.toString();
    }

    static String digest(List<String> rows) throws Exception {
        Collections.sort(rows);
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        for (String r : rows) {
            md.update(r.getBytes(StandardCharsets.UTF_8));
            md.update((byte) '\n');
        }
        StringBuilder sb = new StringBuilder();
        for (byte b : md.digest()) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }

    /** Plans and reads {@code t} with {@code p}: {splits, reader rows}, and the rows where p holds into out. */
    static long[] scan(Table t, Predicate p, List<String> out) throws Exception {
        RowType rt = t.rowType();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < rt.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(rt.getTypeAt(i), i));
        }
        ReadBuilder rb = t.newReadBuilder();
        if (p != null) {
            rb = rb.withFilter(p);
        }
        List<Split> splits = rb.newScan().plan().splits();
        long rows = 0;
        for (Split s : splits) {
            try (RecordReader<InternalRow> r = rb.newRead().createReader(s)) {
                RecordReader.RecordIterator<InternalRow> it;
                while ((it = r.readBatch()) != null) {
                    InternalRow row;
                    while ((row = it.next()) != null) {
                        rows++;
                        if (p == null || p.test(row)) {
                            out.add(show(row, getters));
                        }
                    }
                    it.releaseBatch();
                }
            }
        }
        return new long[] {splits.size(), rows};
    }

    static void read(Table table, String[] args) throws Exception {
        String snapshot = args[3];
        List<String> all = new ArrayList<>();
        scan(at(table, snapshot, true), null, all);
        System.out.println("full\t" + all.size() + "\t" + digest(all));
        RowType rt = table.rowType();
        PredicateBuilder b = new PredicateBuilder(rt);
        for (int k = 4; k < args.length; k++) {
            String[] q = args[k].split(":", 4);
            int field = rt.getFieldIndex(q[1]);
            Predicate p = q[2].equals("isnull") ? b.isNull(field) : b.equal(field, literal(rt.getTypeAt(field), q[3]));
            for (boolean enabled : new boolean[] {true, false}) {
                List<String> rows = new ArrayList<>();
                long[] r = scan(at(table, snapshot, enabled), p, rows);
                System.out.println("q\t" + q[0] + "\t" + enabled + "\t" + r[0] + "\t" + r[1] + "\t" + rows.size() + "\t" + digest(rows));
            }
        }
    }

    /** A generated value of {@code type} for row {@code i} ({@code partition}: one of two values). */
    static Object value(DataField f, long i, boolean partition) {
        switch (f.type().getTypeRoot()) {
            case BIGINT:
                return i;
            case INTEGER:
                return (int) (i % 100_000);
            case SMALLINT:
                return (short) (i % 1000);
            case DOUBLE:
                return i * 0.5;
            case FLOAT:
                return (float) (i % 1000);
            case BOOLEAN:
                return i % 2 == 0;
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(partition ? (i % 2 == 0 ? "a" : "b") : f.name() + "-app-" + i);
            default:
                return null;
        }
    }

    static void append(Catalog catalog, Identifier id, int commits, int rows, long offset, String gate) throws Exception {
        Table t = catalog.getTable(id);
        List<String> partitionKeys = t.partitionKeys();
        List<DataField> fields = t.rowType().getFields();
        long n = 0;
        for (int c = 0; c < commits; c++) {
            if (gate != null && c >= 1) {
                java.nio.file.Path go = java.nio.file.Paths.get(gate, "go-" + (c + 1));
                long deadline = System.currentTimeMillis() + 300_000;
                while (!java.nio.file.Files.exists(go)) {
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("no " + go + " within 300 s");
                    }
                    Thread.sleep(5);
                }
            }
            final long start = offset + (long) c * rows;
            commit(catalog, id, null, w -> {
                for (long i = start; i < start + rows; i++) {
                    Object[] vals = new Object[fields.size()];
                    for (int k = 0; k < vals.length; k++) {
                        vals[k] = value(fields.get(k), i, partitionKeys.contains(fields.get(k).name()));
                    }
                    w.write(GenericRow.of(vals));
                }
            });
            n += rows;
            if (gate != null) {
                java.nio.file.Files.createFile(java.nio.file.Paths.get(gate, "committed-" + (c + 1)));
            }
            System.out.println("committed " + (c + 1));
            System.out.flush();
        }
        System.out.println("appended " + n);
    }
}
