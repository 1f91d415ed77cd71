import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.index.FileIndexProcessor;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Java Paimon's own {@code rewrite_file_index} (Paimon master only: its
 * {@code FileIndexProcessor}, as the Spark and Flink procedures run it, without Spark): every
 * live file processed, the changed ones committed as one compaction.
 *
 * <pre>
 * rewrite WAREHOUSE DB.TABLE [KEY=VALUE ...]   ALTER TABLE SET the options (if any), then rewrite
 *                                               and commit; prints "rewritten N ms"
 * bench WAREHOUSE DB.TABLE RUNS       process every file RUNS times (JIT warm-up included, nothing
 *                                     committed; the .index files written are left), prints each run's
 *                                     wall-clock ms and the JVM's CPU ms
 * serve WAREHOUSE DB.TABLE            prints "ready", then one such run per line read from standard input
 * </pre>
 */
public class JavaRewrite extends WriteBench {

    public static void main(String[] args) throws Exception {
        Catalog catalog = catalog(args[1]);
        String[] name = args[2].split("\\.");
        Identifier id = Identifier.create(name[0], name[1]);
        if (args[0].equals("rewrite") && args.length > 3) {
            List<SchemaChange> changes = new ArrayList<>();
            for (int i = 3; i < args.length; i++) {
                String[] kv = args[i].split("=", 2);
                changes.add(SchemaChange.setOption(kv[0], kv[1]));
            }
            catalog.alterTable(id, changes, false);
        }
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        if (args[0].equals("rewrite")) {
            long t0 = System.nanoTime();
            List<CommitMessage> messages = process(table);
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
            System.out.printf("rewritten %d %.1f ms%n", messages.size(), (System.nanoTime() - t0) / 1e6);
        } else if (args[0].equals("bench")) {
            int runs = Integer.parseInt(args[3]);
            for (int i = 0; i < runs; i++) {
                timed(table);
            }
        } else if (args[0].equals("serve")) {
            java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
            System.out.println("ready");
            System.out.flush();
            while (in.readLine() != null) { // one run per line read, until standard input closes
                timed(table);
            }
        } else {
            throw new IllegalArgumentException("rewrite WAREHOUSE DB.TABLE | bench WAREHOUSE DB.TABLE RUNS");
        }
    }

    /** One run over every file: prints "java FILES WALL_MS CPU_MS" (CPU: every JVM thread, JIT and GC too). */
    static void timed(FileStoreTable table) throws Exception {
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long t0 = System.nanoTime();
        long cpu0 = os.getProcessCpuTime();
        List<CommitMessage> messages = process(table);
        long cpu = os.getProcessCpuTime() - cpu0;
        System.out.printf("java\t%d\t%.1f\t%.1f%n", messages.size(), (System.nanoTime() - t0) / 1e6, cpu / 1e6);
        System.out.flush();
    }

    static List<CommitMessage> process(FileStoreTable table) throws Exception {
        List<ManifestEntry> entries = table.store().newScan().plan().files();
        FileIndexProcessor processor = new FileIndexProcessor(table);
        List<CommitMessage> messages = new ArrayList<>();
        for (ManifestEntry entry : entries) {
            DataFileMeta indexed = processor.process(entry.partition(), entry.bucket(), entry);
            if (entry.file().equals(indexed)) {
                continue;
            }
            messages.add(new CommitMessageImpl(entry.partition(), entry.bucket(), entry.totalBuckets(),
                    DataIncrement.emptyIncrement(),
                    new CompactIncrement(Collections.singletonList(entry.file()), Collections.singletonList(indexed),
                            Collections.emptyList())));
        }
        return messages;
    }
}
