// setupFiles of the "cluster" project: the same behaviour suites, connected to the cluster (test/support/testing.ts).
process.env.NRQ_TOPOLOGY = 'cluster';
