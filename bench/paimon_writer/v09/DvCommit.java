import org.apache.paimon.Snapshot;
import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.deletionvectors.append.AppendDeletionFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.io.IndexIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The part of {@code JavaDelete} that differs between Paimon versions (this one: 0.9.0): Java's
 * own write path for a DELETE on an append table with deletion vectors, as Spark's
 * {@code PaimonSparkWriter.persistDeletionVectors} drives it, and an append-table compaction.
 */
class DvCommit {

    static DeletionVector newVector(FileStoreTable t) {
        return new BitmapDeletionVector();
    }

    static CommitMessage message(FileStoreTable t, Snapshot snap, BinaryRow partition, int bucket, boolean unaware,
                                 Map<String, DeletionVector> vectors) {
        IndexFileHandler h = t.store().newIndexFileHandler();
        AppendDeletionFileMaintainer m = unaware
                ? AppendDeletionFileMaintainer.forUnawareAppend(h, snap.id(), partition)
                : AppendDeletionFileMaintainer.forBucketedAppend(h, snap.id(), partition, bucket);
        for (Map.Entry<String, DeletionVector> e : vectors.entrySet()) {
            m.notifyNewDeletionVector(e.getKey(), e.getValue());
        }
        List<IndexFileMeta> added = new ArrayList<>();
        List<IndexFileMeta> deleted = new ArrayList<>();
        for (IndexManifestEntry e : m.persist()) {
            (e.kind() == FileKind.ADD ? added : deleted).add(e.indexFile());
        }
        return new CommitMessageImpl(partition, bucket, DataIncrement.emptyIncrement(), CompactIncrement.emptyIncrement(),
                new IndexIncrement(added, deleted));
    }

    static List<CommitMessage> compactAppend(FileStoreTable t) throws Exception {
        List<CommitMessage> out = new ArrayList<>();
        AppendOnlyFileStoreWrite write = (AppendOnlyFileStoreWrite) t.store().newWrite(UUID.randomUUID().toString());
        for (UnawareAppendCompactionTask task : new UnawareAppendTableCompactionCoordinator(t, false).run()) {
            out.add(task.doCompact(t, write));
        }
        return out;
    }
}
