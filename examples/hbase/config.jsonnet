// Parameters of the HBase cluster.
local gaia = import 'gaia.libsonnet';

{
  image: 'apache/hbase:2.5.5',
  // One active master and one backup.
  masters: 2,
  regionservers: gaia.config('hbase.regionservers', 3),
  znode_parent: '/hbase',
  // Where in HDFS the tables live, under the namenode URI of the dependency.
  root_path: '/hbase',
  master: { resources: { cpu: '2', memory: '4Gi' }, heap: '3g' },
  regionserver: {
    resources: { cpu: '8', memory: '32Gi' },
    heap: '24g',
    // The block cache is most of the heap; the memstore takes the rest.
    block_cache_fraction: 0.4,
  },
}
