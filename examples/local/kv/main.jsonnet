// One Redis server. The process backend gives it GAIA_ADDRESS (its loopback address)
// and GAIA_PORT_REDIS (the host port allocated for the port named `redis`).
function(config, deps, app) {
  roles: {
    server: {
      kind: 'service',
      command: [
        'sh',
        '-c',
        'exec redis-server --bind "$GAIA_ADDRESS" --port "$GAIA_PORT_REDIS" --save "" --appendonly no ' +
        '--protected-mode no --maxmemory ' + config.maxmemory,
      ],
      replicas: 1,
      resources: { cpu: '100m', memory: '128Mi' },
      ports: [{ name: 'redis', port: 6379, protocol: 'TCP' }],
      health: { type: 'tcp', target: 'redis', period: '1s', timeout: '1s', failure_threshold: 3 },
    },
  },
  outputs: { protocol: 'redis' },
}
