// Goal (process faults, part 1): the process-fault suite (cluster-kill-suite.ts) on this host's
// nats-server (Debian 12's 2.9.10). It replays a purge as a purge of the whole stream after a crash, so
// the nodes never compact the stream here: after the faults its compaction point is still index 1.
// The full-cluster crash runs only in cluster-kill-compaction.test.ts (2.10.27): after every 2.9.10
// server was SIGKILLed at once, their copies of the stream were seen holding different messages at the
// same sequence, so nodes reading different copies disagree whatever Roster does
// (docs/cluster.md#nats-server-versions).
import { clusterKillSuite } from './cluster-kill-suite.ts';

clusterKillSuite({ compaction: false, fullCrash: false });
