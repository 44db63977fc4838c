// Parameters of the Kafka cluster.
local gaia = import 'gaia.libsonnet';

{
  image: 'bitnami/kafka:3.6.0',
  brokers: gaia.config('kafka.brokers', 3),
  default_replication: gaia.config('kafka.default_replication', 3),
  min_insync_replicas: 2,
  retention_hours: gaia.config('kafka.retention_hours', 168),
  num_partitions: 12,
  // Kafka keeps its znodes under a chroot so ZooKeeper can be shared.
  zk_chroot: '/kafka',
  resources: { cpu: '4', memory: '16Gi' },
  heap: '6g',
  log_volume: { size: '4Ti', iops: 500 },
}
