// Kafka brokers, spread across racks so that a rack failure leaves every partition
// with in-sync replicas.
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  assert config.default_replication <= config.brokers :
         'default_replication (%d) needs at least as many brokers (%d)' % [config.default_replication, config.brokers];
  // gaia labels every instance with app, role, tenant and version; terms match on them.
  local peers = { app: app.name, role: 'broker' };
  {
    roles: {
      broker: {
        kind: 'service',
        image: config.image,
        // Each broker advertises its own instance name, which is its host name.
        command: [
          'sh',
          '-c',
          'export KAFKA_CFG_ADVERTISED_LISTENERS=PLAINTEXT://$(hostname -f):9092; exec /opt/bitnami/scripts/kafka/entrypoint.sh /opt/bitnami/scripts/kafka/run.sh',
        ],
        env: {
          KAFKA_CFG_ZOOKEEPER_CONNECT: deps.zk.quorum + config.zk_chroot,
          KAFKA_CFG_LISTENERS: 'PLAINTEXT://:9092',
          KAFKA_CFG_LOG_DIRS: '/data/kafka',
          KAFKA_CFG_NUM_PARTITIONS: std.toString(config.num_partitions),
          KAFKA_CFG_DEFAULT_REPLICATION_FACTOR: std.toString(config.default_replication),
          KAFKA_CFG_MIN_INSYNC_REPLICAS: std.toString(config.min_insync_replicas),
          KAFKA_CFG_LOG_RETENTION_HOURS: std.toString(config.retention_hours),
          KAFKA_CFG_AUTO_CREATE_TOPICS_ENABLE: 'false',
          KAFKA_HEAP_OPTS: '-Xms%s -Xmx%s' % [config.heap, config.heap],
          ALLOW_PLAINTEXT_LISTENER: 'yes',
        },
        replicas: config.brokers,
        resources: config.resources,
        labels: { layer: 'messaging' },
        anti_affinity: {
          required: [{ target: 'instance', match_labels: peers, topology: 'node' }],
          preferred: [{ target: 'instance', match_labels: peers, topology: 'rack', weight: 100 }],
        },
        ports: [
          { name: 'kafka', port: 9092, protocol: 'TCP' },
        ],
        volumes: [
          { name: 'logs', size: config.log_volume.size, class: 'hdd', iops: config.log_volume.iops, mount: '/data' },
        ],
        restart: { retry_times: 5, backoff: '10s' },
        // min.insync.replicas brokers must stay up for producers with acks=all.
        migration: { migrate_times: 3, min_available: std.min(config.min_insync_replicas, std.max(config.brokers - 1, 0)) },
        health: { type: 'tcp', target: 'kafka', period: '10s', timeout: '3s', failure_threshold: 3 },
      },
    },
    outputs: {
      bootstrap_servers: std.join(',', ['%s:9092' % gaia.instanceName(app, 'broker', i) for i in std.range(0, config.brokers - 1)]),
    },
  }
