// Parameters of the HDFS cluster. The datanode count and the replication factor
// are read from the config center so operators can grow the cluster without a
// new spec version; `--set datanodes=5` overrides both the center and the default.
local gaia = import 'gaia.libsonnet';

{
  image: 'apache/hadoop:3.3.4',
  datanodes: gaia.config('hdfs.datanodes', 3),
  replication: gaia.config('hdfs.replication', 3),
  block_size: '128m',
  // Datanodes run only on nodes labelled disk=ssd.
  node_selector: { disk: 'ssd' },
  namenode: {
    resources: { cpu: '4', memory: '16Gi' },
    heap: '12g',
    metadata_volume: { size: '200Gi', iops: 6000 },
  },
  datanode: {
    resources: { cpu: '4', memory: '8Gi', disk: '10Gi' },
    heap: '4g',
    data_volume: { size: '2Ti', iops: 10000 },
  },
}
