// PostgreSQL: one primary and streaming replicas, one per node. Two volumes of two
// kinds of storage (docs/spec.md#storage-classes).
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  local primary = gaia.instanceName(app, 'db', 0);
  {
    roles: {
      db: {
        kind: 'service',
        image: config.image,
        env: { PGDATA: '/data/pgdata', PRIMARY_HOST: primary },
        replicas: 1 + config.replicas,
        resources: config.resources,
        ports: [{ name: 'pg', port: 5432, protocol: 'TCP' }],
        volumes: [
          { name: 'wal', size: config.wal.size, class: config.wal.class, iops: config.wal.iops, mount: '/wal' },
          { name: 'data', size: config.data.size, class: config.data.class, mount: '/data' },
        ],
        anti_affinity: {
          required: [{ target: 'instance', match_labels: { app: app.name, role: 'db' }, topology: 'node' }],
        },
        migration: { migrate_times: 3, min_available: 1 },
        health: { type: 'tcp', target: 'pg', period: '10s', timeout: '2s', failure_threshold: 3 },
      },
    },
    outputs: {
      dsn: 'postgres://%s:5432/warehouse' % primary,
    },
  }
