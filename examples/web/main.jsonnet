// The web tier: stateless, spread across zones, health-checked over HTTP.
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  local tier =
    if config.tier != null then config.tier
    else gaia.label('tenant', app.tenant, 'tier', 'standard');
  assert std.objectHas(config.sizes, tier) :
         "tier '%s' has no size: expected one of %s" % [tier, std.join(', ', std.objectFields(config.sizes))];
  {
    roles: {
      frontend: {
        kind: 'service',
        image: config.image,
        command: ['/usr/local/bin/web', '--listen=:8080', '--log-level=' + config.log_level],
        env: {
          KAFKA_BOOTSTRAP_SERVERS: deps.kafka.bootstrap_servers,
          CLICKS_TOPIC: config.clicks_topic,
          HBASE_ZOOKEEPER_QUORUM: deps.hbase.zookeeper_quorum,
          HBASE_ZNODE_PARENT: deps.hbase.znode_parent,
          PROFILES_TABLE: config.profiles_table,
          // Flags travel as one JSON document; the service reloads on restart.
          FEATURE_FLAGS: std.manifestJsonMinified(config.feature_flags),
          SESSION_SECRET: config.session_secret,
          TENANT: app.tenant,
        },
        replicas: config.replicas,
        resources: config.sizes[tier],
        labels: { tier: tier },
        anti_affinity: {
          preferred: [
            { target: 'instance', match_labels: { app: app.name, role: 'frontend' }, topology: 'zone', weight: 100 },
            { target: 'instance', match_labels: { app: app.name, role: 'frontend' }, topology: 'node', weight: 50 },
          ],
        },
        ports: [
          { name: 'http', port: 8080, protocol: 'TCP' },
        ],
        restart: { retry_times: 10, backoff: '2s' },
        // Rolling moves keep at least two thirds of the replicas serving.
        migration: { migrate_times: 5, min_available: std.ceil(config.replicas * 2 / 3) },
        health: { type: 'http', target: 'http/healthz', period: '5s', timeout: '1s', failure_threshold: 3 },
      },
    },
    outputs: {
      url: 'http://%s:8080' % gaia.serviceName(app, 'frontend'),
    },
  }
