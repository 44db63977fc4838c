// Each instance writes its document root into its working directory at start, then
// serves it with busybox httpd on its own address. The CGI script gets kv's endpoint
// baked in from GAIA_DEP_KV_SERVER_REDIS ("address:port", the first serving server).
local start = |||
  set -eu
  ep="${GAIA_DEP_KV_SERVER_REDIS%%%%,*}"
  mkdir -p www/cgi-bin
  echo "%(greeting)s from $GAIA_INSTANCE" > www/index.html
  cat > www/cgi-bin/hits <<EOF
  #!/bin/sh
  echo "Content-Type: text/plain"
  echo
  n=\$(/usr/bin/redis-cli -h ${ep%%:*} -p ${ep##*:} INCR hits)
  echo "%(greeting)s from $GAIA_INSTANCE: visit \$n"
  EOF
  chmod +x www/cgi-bin/hits
  exec busybox httpd -f -p "$GAIA_ADDRESS:$GAIA_PORT_HTTP" -h www
|||;

function(config, deps, app) {
  roles: {
    web: {
      kind: 'service',
      command: ['sh', '-c', start % { greeting: config.greeting }],
      replicas: config.replicas,
      resources: { cpu: '100m', memory: '64Mi' },
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      health: { type: 'http', target: 'http/', period: '1s', timeout: '1s', failure_threshold: 3 },
    },
  },
  outputs: { path: '/cgi-bin/hits' },
}
