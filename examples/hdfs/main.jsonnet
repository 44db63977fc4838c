// HDFS: a namenode (metadata) and datanodes (blocks), both on SSD volumes.
local gaia = import 'gaia.libsonnet';
local site = import 'lib/site.libsonnet';

function(config, deps, app)
  assert config.replication <= gaia.replicas(app, 'datanode', config.datanodes) :
         'replication (%d) cannot exceed the number of datanodes (%d)' %
         [config.replication, gaia.replicas(app, 'datanode', config.datanodes)];
  // The datanode count as `gaia scale` set it, else as configured: the check above and
  // min_available below hold for a scaled count too, so a scale below the replication
  // factor is refused as a submit of that count would be.
  local datanodes = gaia.replicas(app, 'datanode', config.datanodes);
  local namenode = gaia.serviceName(app, 'namenode');
  local namenode_uri = 'hdfs://%s:8020' % namenode;
  local conf_dir = '/opt/hadoop/etc/hadoop';
  local files = {
    'core-site.xml': site.xml({
      'fs.defaultFS': namenode_uri,
      'ha.zookeeper.quorum': deps.zk.quorum,
    }),
    'hdfs-site.xml': site.xml({
      'dfs.replication': config.replication,
      'dfs.blocksize': config.block_size,
      'dfs.namenode.name.dir': 'file:///data/name',
      'dfs.datanode.data.dir': 'file:///data/blocks',
      'dfs.namenode.rpc-bind-host': '0.0.0.0',
      'dfs.namenode.http-bind-host': '0.0.0.0',
      'dfs.permissions.superusergroup': 'hadoop',
    }),
  };
  // gaia labels every instance with app, role, tenant and version; terms match on them.
  local peers = { app: app.name, role: 'datanode' };
  {
    roles: {
      namenode: site.launch(conf_dir, files, [
        'sh',
        '-c',
        // Format the namespace on the very first start only; the volume keeps it.
        '[ -d /data/name/current ] || hdfs namenode -format -nonInteractive; exec hdfs namenode',
      ]) + {
        kind: 'service',
        image: config.image,
        env+: { HADOOP_HEAPSIZE_MAX: config.namenode.heap },
        replicas: 1,
        resources: config.namenode.resources,
        labels: { layer: 'storage' },
        node_selector: config.node_selector,
        ports: [
          { name: 'rpc', port: 8020, protocol: 'TCP' },
          { name: 'http', port: 9870, protocol: 'TCP' },
        ],
        volumes: [
          { name: 'meta', size: config.namenode.metadata_volume.size, class: 'ssd', iops: config.namenode.metadata_volume.iops, mount: '/data' },
        ],
        restart: { retry_times: 5, backoff: '30s' },
        migration: { migrate_times: 2, min_available: 0 },
        health: { type: 'tcp', target: 'rpc', period: '10s', timeout: '3s', failure_threshold: 6 },
      },

      datanode: site.launch(conf_dir, files, ['hdfs', 'datanode']) + {
        kind: 'service',
        image: config.image,
        env+: { HADOOP_HEAPSIZE_MAX: config.datanode.heap },
        replicas: datanodes,
        resources: config.datanode.resources,
        labels: { layer: 'storage' },
        node_selector: config.node_selector,
        // One datanode per node: two on one node would put replicas of a block on
        // the same machine. Spread over racks when possible.
        anti_affinity: {
          required: [{ target: 'instance', match_labels: peers, topology: 'node' }],
          preferred: [{ target: 'instance', match_labels: peers, topology: 'rack', weight: 50 }],
        },
        ports: [
          { name: 'data', port: 9866, protocol: 'TCP' },
          { name: 'http', port: 9864, protocol: 'TCP' },
          { name: 'ipc', port: 9867, protocol: 'TCP' },
        ],
        volumes: [
          { name: 'blocks', size: config.datanode.data_volume.size, class: 'ssd', iops: config.datanode.data_volume.iops, mount: '/data' },
        ],
        restart: { retry_times: 5, backoff: '10s' },
        // Blocks are re-replicated when a datanode leaves; keep all but one running.
        migration: { migrate_times: 3, min_available: std.max(datanodes - 1, 0) },
        health: { type: 'tcp', target: 'data', period: '10s', timeout: '2s', failure_threshold: 3 },
      },
    },
    outputs: {
      namenode_uri: namenode_uri,
      webhdfs_uri: 'http://%s:9870/webhdfs/v1' % namenode,
    },
  }
