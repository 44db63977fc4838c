// Spark standalone: one master and workers that host the executors. Workers sit
// near HDFS datanodes so tasks read their input blocks locally.
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  local master = gaia.serviceName(app, 'master');
  local master_url = 'spark://%s:7077' % master;
  local event_log_dir = deps.hdfs.namenode_uri + config.event_log_path;
  local common = {
    kind: 'service',
    image: config.image,
    env: {
      SPARK_NO_DAEMONIZE: 'true',
      SPARK_HISTORY_OPTS: '-Dspark.history.fs.logDirectory=' + event_log_dir,
      HADOOP_CONF_DIR: '/opt/spark/conf',
    } + (
      // deps.kafka is there only while the dependency applies (streaming.enabled).
      if std.objectHas(deps, 'kafka') then { KAFKA_BOOTSTRAP_SERVERS: deps.kafka.bootstrap_servers } else {}
    ),
    restart: { retry_times: 3, backoff: '5s' },
  };
  {
    roles: {
      master: common + {
        command: ['/opt/spark/bin/spark-class', 'org.apache.spark.deploy.master.Master', '--host', '0.0.0.0', '--port', '7077', '--webui-port', '8080'],
        replicas: 1,
        resources: config.master.resources,
        labels: { layer: 'compute' },
        ports: [
          { name: 'spark', port: 7077, protocol: 'TCP' },
          { name: 'http', port: 8080, protocol: 'TCP' },
        ],
        health: { type: 'http', target: 'http/', period: '10s', timeout: '2s', failure_threshold: 3 },
      },

      worker: common + {
        command: [
          '/opt/spark/bin/spark-class',
          'org.apache.spark.deploy.worker.Worker',
          '--cores',
          std.toString(config.worker.executor_cores),
          '--memory',
          config.worker.executor_memory,
          '--webui-port',
          '8081',
          master_url,
        ],
        env+: { SPARK_WORKER_DIR: '/tmp/spark-work' },
        replicas: config.workers,
        // Workers register with the master when they start: they wait for it.
        after: ['master'],
        resources: config.worker.resources,
        limits: config.worker.limits,
        labels: { layer: 'compute' },
        near: 'hdfs/datanode',
        anti_affinity: {
          preferred: [{ target: 'instance', match_labels: { app: app.name, role: 'worker' }, topology: 'node', weight: 60 }],
        },
        ports: [
          { name: 'http', port: 8081, protocol: 'TCP' },
        ],
        // Batch capacity: workers may all move at once.
        migration: { migrate_times: 5, min_available: 0 },
        health: { type: 'tcp', target: 'http', period: '15s', timeout: '2s', failure_threshold: 4 },
      },
    },
    outputs: {
      master_url: master_url,
      event_log_dir: event_log_dir,
    },
  }
