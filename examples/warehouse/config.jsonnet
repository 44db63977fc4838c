// Parameters of the warehouse. The storage classes are those of the cluster it runs
// on: `gaia cluster show` lists them, and plan and submit refuse a class the cluster
// does not have, naming the ones it has.
local gaia = import 'gaia.libsonnet';

{
  image: 'postgres:16',
  replicas: gaia.config('warehouse.replicas', 2),
  resources: { cpu: '4', memory: '16Gi' },
  // The log wants latency: a local class, so each instance stays on its node.
  wal: { size: '200Gi', class: 'local-nvme', iops: 20000 },
  // The tables want to survive a node: a claim class, which follows the instance.
  data: { size: '2Ti', class: 'gold' },
}
