// Distributed data-parallel training with torchrun: every worker runs the same
// command and rendezvous happens at worker 0.
local gaia = import 'gaia.libsonnet';

function(config, deps, app)
  // gaia labels every instance with app, role, tenant and version; terms match on them.
  local peers = { app: app.name, role: 'worker' };
  {
    roles: {
      worker: {
        kind: 'batch',
        image: config.image,
        command: [
          'sh',
          '-c',
          // c10d rendezvous assigns node ranks itself; worker 0 hosts the store.
          'exec torchrun --nnodes=%d --nproc-per-node=%d --rdzv-backend=c10d --rdzv-id=%s-%s --rdzv-endpoint=%s:29500 /app/train.py' % [
            config.workers,
            config.gpus_per_worker,
            app.name,
            app.version,
            gaia.instanceName(app, 'worker', 0),
          ],
        ],
        env: {
          DATASET_URI: deps.hdfs.namenode_uri + config.dataset_path,
          CHECKPOINT_URI: deps.hdfs.namenode_uri + config.checkpoint_path,
          WEBHDFS_URI: deps.hdfs.webhdfs_uri,
          EPOCHS: std.toString(config.epochs),
          BATCH_SIZE: std.toString(config.batch_size),
          LEARNING_RATE: std.toString(config.learning_rate),
          NCCL_DEBUG: 'WARN',
        },
        replicas: config.workers,
        resources: config.resources { gpu: config.gpus_per_worker },
        labels: { layer: 'compute' },
        node_selector: { 'gpu-model': config.gpu_model },
        // All-reduce traffic is heavy: keep the workers under one switch if possible.
        affinity: {
          preferred: [{ target: 'instance', match_labels: peers, topology: 'switch', weight: 80 }],
        },
        ports: [
          { name: 'rendezvous', port: 29500, protocol: 'TCP' },
        ],
        restart: { retry_times: 2, backoff: '1m' },
        migration: { migrate_times: 1, min_available: 0 },
      } + (if config.zone != null then { network: { topology: 'zone=' + config.zone } } else {}),
    },
    outputs: {
      checkpoint_dir: deps.hdfs.namenode_uri + config.checkpoint_path,
    },
  }
