// Parameters of the ZooKeeper ensemble. Every value can be overridden with
// `--set zookeeper.<field>=...`-style keys in the config center, or with
// `--set servers=5` / `--values FILE` at render time.
local gaia = import 'gaia.libsonnet';

{
  image: 'apache/zookeeper:3.6.4',
  // An odd number: a quorum of 3 tolerates one failure, 5 tolerates two.
  servers: gaia.config('zookeeper.servers', 3),
  tick_time_ms: gaia.config('zookeeper.tick_time_ms', 2000),
  heap_mb: 1024,
  resources: { cpu: '1', memory: '2Gi' },
  // Transaction logs are latency sensitive: a small SSD volume is enough.
  data_volume: { size: '20Gi', iops: 3000 },
  ports: { client: 2181, peer: 2888, election: 3888 },
}
