// Goal (process faults, part 1, compacted): the process-fault suite (cluster-kill-suite.ts) on Debian 13's
// nats-server (2.10.27, fetched by test/support/node-dist.ts), which replays purges safely: the nodes
// compact the stream while a nemesis SIGKILLs nodes and servers, two of three are lost, and the whole
// cluster crashes; nothing acknowledged is lost, and every node restarts from a snapshot the purges left.
import { debianNatsServer } from '../support/node-dist.ts';
import { clusterKillSuite } from './cluster-kill-suite.ts';

process.env.ROSTER_NATS_SERVER = debianNatsServer();
clusterKillSuite({ compaction: true, fullCrash: true });
