import org.apache.paimon.Snapshot;
import org.apache.paimon.append.AppendCompactCoordinator;
import org.apache.paimon.append.AppendCompactTask;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.deletionvectors.Bitmap64DeletionVector;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.deletionvectors.DeletionVector;
import org.apache.paimon.deletionvectors.append.BaseAppendDeleteFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.operation.BaseAppendFileStoreWrite;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The part of {@code JavaDelete} that differs between Paimon versions (this one: master): Java's
 * own write path for a DELETE on an append table with deletion vectors, as Spark's
 * {@code PaimonSparkWriter.persistDeletionVectors} drives it, and an append-table compaction.
 */
class DvCommit {

    static DeletionVector newVector(FileStoreTable t) {
        return t.coreOptions().deletionVectorBitmap64() ? new Bitmap64DeletionVector() : new BitmapDeletionVector();
    }

    /** One commit message per (partition, bucket): the maintainer's index file changes. */
    static CommitMessage message(FileStoreTable t, Snapshot snap, BinaryRow partition, int bucket, boolean unaware,
                                 Map<String, DeletionVector> vectors) {
        IndexFileHandler h = t.store().newIndexFileHandler();
        BaseAppendDeleteFileMaintainer m = unaware
                ? BaseAppendDeleteFileMaintainer.forUnawareAppend(h, snap, partition)
                : BaseAppendDeleteFileMaintainer.forBucketedAppend(h, snap, partition, bucket);
        for (Map.Entry<String, DeletionVector> e : vectors.entrySet()) {
            m.notifyNewDeletionVector(e.getKey(), e.getValue());
        }
        List<IndexFileMeta> added = new ArrayList<>();
        List<IndexFileMeta> deleted = new ArrayList<>();
        for (IndexManifestEntry e : m.persist()) {
            (e.kind() == FileKind.ADD ? added : deleted).add(e.indexFile());
        }
        return new CommitMessageImpl(partition, bucket, null,
                new DataIncrement(Collections.emptyList(), Collections.emptyList(), Collections.emptyList(), added, deleted),
                CompactIncrement.emptyIncrement());
    }

    /** Java's compaction of an unaware-bucket append table: the coordinator's tasks, done. */
    static List<CommitMessage> compactAppend(FileStoreTable t) throws Exception {
        List<CommitMessage> out = new ArrayList<>();
        BaseAppendFileStoreWrite write = (BaseAppendFileStoreWrite) t.store().newWrite(UUID.randomUUID().toString());
        for (AppendCompactTask task : new AppendCompactCoordinator(t, false).run()) {
            out.add(task.doCompact(t, write));
        }
        return out;
    }
}
