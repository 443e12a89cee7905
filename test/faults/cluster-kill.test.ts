// Goal (process faults, part 1): the process-fault suite (cluster-kill-suite.ts) on this host's
// nats-server (Debian 12's 2.9.10). It replays a purge as a purge of the whole stream after a crash, so
// the nodes never compact the stream here: after the faults its compaction point is still index 1.
import { clusterKillSuite } from './cluster-kill-suite.ts';

clusterKillSuite({ compaction: false });
