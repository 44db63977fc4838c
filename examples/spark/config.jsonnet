// Parameters of the Spark cluster.
local gaia = import 'gaia.libsonnet';

{
  image: 'apache/spark:3.5.0',
  workers: gaia.config('spark.workers', 4),
  // What each worker offers to executors; the rest of the container is overhead.
  worker: {
    // Reserved per worker; executors may burst to idle cores up to the limit (memory
    // is not overcommitted: an executor above it would be killed).
    resources: { cpu: '8', memory: '30Gi', disk: '100Gi' },
    limits: { cpu: '16' },
    executor_cores: 8,
    executor_memory: '24g',
  },
  master: { resources: { cpu: '1', memory: '2Gi' } },
  event_log_path: '/spark/events',
  // Streaming jobs read from Kafka: turning this on makes spark depend on kafka.
  streaming: { enabled: gaia.config('spark.streaming', false) },
}
