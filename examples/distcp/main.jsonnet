// One batch instance runs distcp from the source release to the target release; each
// namenode URI comes from the release it is bound to, so the two never mix up.
function(config, deps, app) {
  roles: {
    copy: {
      kind: 'batch',
      image: config.image,
      command: [
        'hadoop',
        'distcp',
        '-m',
        std.toString(config.maps),
        '-update',
        deps.source.namenode_uri + config.path,
        deps.target.namenode_uri + config.path,
      ],
      replicas: 1,
      resources: config.resources,
      labels: { layer: 'compute' },
      // Read where the source's data lives.
      near: 'source/datanode',
    },
  },
  outputs: { copied_path: deps.target.namenode_uri + config.path },
}
