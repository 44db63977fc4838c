// Hadoop-style configuration files (core-site.xml, hdfs-site.xml, hbase-site.xml)
// built from plain Jsonnet objects, and a launcher that writes them into the
// container before starting the daemon. Roles carry no files, only env and a
// command, so each file travels in an environment variable.
{
  // <configuration><property><name>k</name><value>v</value></property>...</configuration>,
  // properties sorted by name so the text is deterministic.
  xml(props)::
    '<?xml version="1.0"?>\n' + std.manifestXmlJsonml(
      ['configuration'] + [
        ['property', ['name', k], ['value', std.toString(props[k])]]
        for k in std.objectFields(props)
      ]
    ),

  // "core-site.xml" -> "SITE_CORE_SITE_XML".
  envName(file):: 'SITE_' + std.asciiUpper(std.strReplace(std.strReplace(file, '-', '_'), '.', '_')),

  // { env, command } that write every file of `files` (name -> text) into `dir` and
  // then exec `argv`. Merge the result into a role.
  launch(dir, files, argv):: {
    env: { [$.envName(f)]: files[f] for f in std.objectFields(files) },
    command: [
      'sh',
      '-c',
      std.join('; ', [
        'printf "%%s" "$%s" > %s/%s' % [$.envName(f), dir, f]
        for f in std.objectFields(files)
      ] + ['exec "$@"']),
      'launch',
    ] + argv,
  },
}
