// HBase masters and region servers. Region servers run next to HDFS datanodes so
// that reads of their HFiles are short-circuit local reads.
local gaia = import 'gaia.libsonnet';
local site = import 'lib/site.libsonnet';

function(config, deps, app)
  // HBase wants host names in hbase.zookeeper.quorum and the port separately;
  // ZooKeeper exports "host:port,host:port".
  local zk_members = [std.split(m, ':') for m in std.split(deps.zk.quorum, ',')];
  local files = {
    'hbase-site.xml': site.xml({
      'hbase.cluster.distributed': true,
      'hbase.rootdir': deps.hdfs.namenode_uri + config.root_path,
      'hbase.zookeeper.quorum': std.join(',', [m[0] for m in zk_members]),
      'hbase.zookeeper.property.clientPort': zk_members[0][1],
      'zookeeper.znode.parent': config.znode_parent,
      'hfile.block.cache.size': config.regionserver.block_cache_fraction,
      'hbase.unsafe.stream.capability.enforce': false,
    }),
  };
  local conf_dir = '/opt/hbase/conf';
  // gaia labels every instance with app, role, tenant and version; terms match on them.
  local peers = { app: app.name, role: 'regionserver' };
  local common = {
    kind: 'service',
    image: config.image,
    restart: { retry_times: 5, backoff: '15s' },
  };
  {
    roles: {
      master: common + site.launch(conf_dir, files, ['hbase', 'master', 'start']) + {
        env+: { HBASE_HEAPSIZE: config.master.heap },
        replicas: config.masters,
        resources: config.master.resources,
        labels: { layer: 'storage' },
        anti_affinity: {
          required: [{ target: 'instance', match_labels: { app: app.name, role: 'master' }, topology: 'node' }],
        },
        ports: [
          { name: 'rpc', port: 16000, protocol: 'TCP' },
          { name: 'http', port: 16010, protocol: 'TCP' },
        ],
        migration: { migrate_times: 3, min_available: 1 },
        health: { type: 'http', target: 'http/master-status', period: '15s', timeout: '5s', failure_threshold: 3 },
      },

      regionserver: common + site.launch(conf_dir, files, ['hbase', 'regionserver', 'start']) + {
        env+: { HBASE_HEAPSIZE: config.regionserver.heap },
        replicas: config.regionservers,
        resources: config.regionserver.resources,
        labels: { layer: 'storage' },
        // Locality is a preference, not a requirement: a region server still starts
        // when no node next to a datanode has room.
        near: 'hdfs/datanode',
        anti_affinity: {
          preferred: [{ target: 'instance', match_labels: peers, topology: 'node', weight: 100 }],
        },
        ports: [
          { name: 'rpc', port: 16020, protocol: 'TCP' },
          { name: 'http', port: 16030, protocol: 'TCP' },
        ],
        // Regions move to the remaining servers while one is migrated.
        migration: { migrate_times: 3, min_available: std.max(config.regionservers - 1, 0) },
        health: { type: 'tcp', target: 'rpc', period: '10s', timeout: '2s', failure_threshold: 3 },
      },
    },
    outputs: {
      zookeeper_quorum: deps.zk.quorum,
      znode_parent: config.znode_parent,
      master_ui: 'http://%s:16010' % gaia.serviceName(app, 'master'),
    },
  }
