// What to copy, and how wide.
local gaia = import 'gaia.libsonnet';

{
  image: 'apache/hadoop:3.3.6',
  path: gaia.config('distcp.path', '/warehouse/clicks'),
  maps: 8,
  resources: { cpu: '2', memory: '4Gi' },
}
