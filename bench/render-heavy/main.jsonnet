function(config, deps, app)
  local shards = [
    { id: i, name: 'shard-%03d' % i, owner: 'node-%d' % (i % 7), ranges: [[i * 100, i * 100 + 99]], tags: ['t%d' % (i % 3), 'hot'] }
    for i in std.range(0, config.shards - 1)
  ];
  local xml = std.manifestXmlJsonml(['configuration'] + [
    ['property', ['name', k], ['value', config.properties[k]]]
    for k in std.objectFields(config.properties)
  ]);
  local first = shards[0:10];
  local every_other = shards[::2];
  {
    roles: {
      store: {
        kind: 'service',
        image: config.image,
        replicas: config.replicas,
        resources: { cpu: '1', memory: '2Gi' },
        env: {
          SHARDS_JSON: std.manifestJson(shards),
          SHARDS_YAML: std.manifestYamlDoc({ shards: shards, first: first, every_other: every_other }),
          SITE_XML: xml,
          OWNERS: std.join(',', std.set([s.owner for s in shards])),
          RANGES: std.toString(std.flattenArrays([s.ranges for s in shards])),
          NAMES: std.join(' ', [if std.isString(s.name) && std.isNumber(s.id) then '%s=%d' % [s.name, s.id] else '' for s in shards]),
        },
      },
    },
    outputs: {},
  }
