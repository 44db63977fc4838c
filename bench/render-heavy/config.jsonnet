// A template heavy on the standard library, as configuration generators are: formats,
// JSON, YAML and XML files, slices and flattened lists. docs/benchmarks.md renders it
// with two builds (`gaia render bench/render-heavy --no-cache`).
{
  shards: 40,
  replicas: 3,
  image: 'example/store:2.1',
  properties: { ['store.shard.%03d.path' % i]: '/data/shard-%d' % i for i in std.range(0, 39) },
}
