// ZooKeeper ensemble: one stateful role, one instance per node.
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  // Every instance is registered by its own name; servers address each other by it.
  local instance(i) = gaia.instanceName(app, 'server', i);
  local servers = std.range(0, config.servers - 1);
  // gaia labels every instance with app, role, tenant and version; terms match on them.
  local peers = { app: app.name, role: 'server' };
  {
    roles: {
      server: {
        kind: 'service',
        image: config.image,
        // The image reads its id from ZOO_MY_ID; ids start at 1 while instance
        // ordinals start at 0, and the ordinal is the suffix of the host name.
        command: [
          'sh',
          '-c',
          'export ZOO_MY_ID=$(( ${HOSTNAME##*-} + 1 )); exec /docker-entrypoint.sh zkServer.sh start-foreground',
        ],
        env: {
          ZOO_TICK_TIME: std.toString(config.tick_time_ms),
          ZOO_INIT_LIMIT: '10',
          ZOO_SYNC_LIMIT: '5',
          ZOO_4LW_COMMANDS_WHITELIST: 'srvr,ruok,mntr',
          ZOO_DATA_DIR: '/data',
          ZOO_DATA_LOG_DIR: '/data/log',
          JVMFLAGS: '-Xms%dm -Xmx%dm' % [config.heap_mb, config.heap_mb],
          ZOO_SERVERS: std.join(' ', [
            'server.%d=%s:%d:%d;%d' % [i + 1, instance(i), config.ports.peer, config.ports.election, config.ports.client]
            for i in servers
          ]),
        },
        replicas: config.servers,
        resources: config.resources,
        labels: { layer: 'coordination' },
        // Two servers on one node would lose the quorum together.
        anti_affinity: {
          required: [{ target: 'instance', match_labels: peers, topology: 'node' }],
          preferred: [{ target: 'instance', match_labels: peers, topology: 'rack', weight: 80 }],
        },
        ports: [
          { name: 'client', port: config.ports.client, protocol: 'TCP' },
          { name: 'peer', port: config.ports.peer, protocol: 'TCP' },
          { name: 'election', port: config.ports.election, protocol: 'TCP' },
        ],
        volumes: [
          { name: 'data', size: config.data_volume.size, class: 'ssd', iops: config.data_volume.iops, mount: '/data' },
        ],
        restart: { retry_times: 5, backoff: '10s' },
        // Moving a server must never break the quorum: keep a majority running.
        migration: { migrate_times: 3, min_available: std.floor(config.servers / 2) + 1 },
        health: { type: 'tcp', target: 'client', period: '10s', timeout: '2s', failure_threshold: 3 },
      },
    },
    outputs: {
      // "host:2181,host:2181,host:2181", one instance name per server.
      quorum: std.join(',', ['%s:%d' % [instance(i), config.ports.client] for i in servers]),
      client_port: config.ports.client,
    },
  }
